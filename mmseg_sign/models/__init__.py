from .backbones import EfficientNetLite
from .decode_heads import SIGNHead
from .discriminators import PixelLinearDiscriminator, PixelMLPDiscriminator
from .generators import PixelMLPGenerator
from .losses import annealed_weights, gaussian_mmd
from .necks import SpatialInformationModule
from .segmentors import ZeroShotEncoderDecoder
from .utils import positional_encoding_2d

__all__ = [
    'EfficientNetLite', 'SIGNHead', 'PixelMLPGenerator',
    'PixelLinearDiscriminator', 'PixelMLPDiscriminator',
    'SpatialInformationModule', 'ZeroShotEncoderDecoder', 'gaussian_mmd',
    'annealed_weights', 'positional_encoding_2d'
]
