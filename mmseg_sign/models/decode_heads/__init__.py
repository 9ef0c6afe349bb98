from .class_embedding_mixin import ClassEmbeddingMixin
from .self_training_mixin import SelfTrainingMixin
from .sign_head import SIGNHead
from .transfer_mixin import TransferMixin

__all__ = [
    'SIGNHead', 'ClassEmbeddingMixin', 'TransferMixin', 'SelfTrainingMixin'
]
