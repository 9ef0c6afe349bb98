"""D's adversarial loss (paper eq. 6)."""
from torch import Tensor

from ..losses import adversarial_loss

D_REDUCTIONS = ('mean', 'sum')


def discriminator_loss(real_logits: Tensor,
                       fake_logits: Tensor,
                       reduction: str = 'mean') -> Tensor:
    """D's side of eq. 6: real → 1, generated → 0; the two log losses
    averaged (``'mean'``) or summed (``'sum'``, the authors' code).

    Args:
        real_logits (Tensor): D's logits ``[N]`` on real features.
        fake_logits (Tensor): D's logits ``[M]`` on generated features.
        reduction (str): ``'mean'`` or ``'sum'`` of the two terms.

    Returns:
        Tensor: the scalar loss.
    """
    if reduction not in D_REDUCTIONS:
        raise ValueError(f'adv_d_reduction must be one of {D_REDUCTIONS}, '
                         f'got {reduction!r}.')
    loss = (
        adversarial_loss(real_logits, real=True) +
        adversarial_loss(fake_logits, real=False))
    return 0.5 * loss if reduction == 'mean' else loss
