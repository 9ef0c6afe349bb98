from .losses import D_REDUCTIONS, discriminator_loss
from .pixel_discriminators import (PixelLinearDiscriminator,
                                   PixelMLPDiscriminator)

__all__ = [
    'PixelLinearDiscriminator', 'PixelMLPDiscriminator', 'discriminator_loss',
    'D_REDUCTIONS'
]
