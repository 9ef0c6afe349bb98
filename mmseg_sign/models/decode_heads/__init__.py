from .class_embedding_mixin import ClassEmbeddingMixin
from .self_training_mixin import SelfTrainingMixin
from .sign_head import SIGNHead
from .spnet_head import SPNetHead
from .transfer_mixin import TransferMixin

__all__ = [
    'SIGNHead', 'SPNetHead', 'ClassEmbeddingMixin', 'TransferMixin',
    'SelfTrainingMixin'
]
