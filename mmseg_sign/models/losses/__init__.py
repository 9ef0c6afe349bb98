from .class_weighted_cross_entropy import ClassWeightedCrossEntropyLoss
from .precision import float32_op
from .sign_losses import (adversarial_loss, annealed_weights, gaussian_mmd,
                          kl_divergence, masked_mean)

__all__ = [
    'gaussian_mmd', 'kl_divergence', 'masked_mean', 'adversarial_loss',
    'annealed_weights', 'float32_op', 'ClassWeightedCrossEntropyLoss'
]
