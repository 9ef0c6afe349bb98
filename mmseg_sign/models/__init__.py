from .decode_heads import SIGNHead
from .losses import annealed_weights, gaussian_mmd
from .necks import SpatialInformationModule
from .segmentors import ZeroShotEncoderDecoder
from .utils import positional_encoding_2d

__all__ = [
    'SIGNHead', 'SpatialInformationModule', 'ZeroShotEncoderDecoder',
    'gaussian_mmd', 'annealed_weights', 'positional_encoding_2d'
]
