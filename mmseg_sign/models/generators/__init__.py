from .losses import MMD_ESTIMATORS, class_mmd_loss, sample_per_class
from .pixel_mlp_generator import PixelMLPGenerator, mlp_layers

__all__ = [
    'PixelMLPGenerator', 'mlp_layers', 'class_mmd_loss', 'sample_per_class',
    'MMD_ESTIMATORS'
]
