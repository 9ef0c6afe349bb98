"""NoisePriorNeck (ZS3Net's latent): Gaussian noise that does not depend on
the image, zero at test time, the KL term exactly 0."""
import torch
from mmseg.registry import MODELS


def test_zs3net_latent_is_noise_independent_of_the_image():
    neck = MODELS.build(
        dict(
            type='NoisePriorNeck', in_channels=4, channels=6,
            dilations=(1, 2)))
    a, b = torch.randn(2, 4, 5, 5), 10 * torch.randn(2, 4, 5, 5)
    torch.manual_seed(3)
    feats_a, mu, logvar, z_a = neck([a])
    torch.manual_seed(3)
    feats_b, _, _, z_b = neck([b])
    assert not torch.equal(feats_a, feats_b)
    torch.testing.assert_close(z_a, z_b)  # the same noise whatever the image
    torch.manual_seed(3)
    torch.testing.assert_close(z_a, torch.randn(2, 6, 5, 5))  # N(0, I)
    assert not mu.any() and not logvar.any()
    # F_x = sigmoid(ASPP(x)), in SIGN's feature range
    expected = torch.sigmoid(sum(branch(a) for branch in neck.input_proj))
    torch.testing.assert_close(feats_a, expected)
    neck.eval()
    assert not neck([a])[3].any()  # z = mu = 0 at test time
