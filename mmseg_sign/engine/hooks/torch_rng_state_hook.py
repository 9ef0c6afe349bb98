"""Keep torch's random state in checkpoints so that a resumed run draws the
same ``z``, dropout masks and pixel samples as an uninterrupted one."""
import torch
from mmengine.hooks import Hook

from mmseg.registry import HOOKS


@HOOKS.register_module()
class TorchRNGStateHook(Hook):
    """Saves the CPU (and CUDA) generator states with every checkpoint and
    restores them on ``--resume``.

    The data pipeline draws from numpy, whose state mmengine reproduces by
    re-seeding and replaying the sampler on resume; the model's own draws
    (SIGN's latent ``z``, dropout, MMD pixel sampling) use torch's global
    generator, which mmengine does not save.
    """
    priority = 'VERY_LOW'

    def before_save_checkpoint(self, runner, checkpoint: dict) -> None:
        state = dict(cpu=torch.get_rng_state())
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            state['cuda'] = torch.cuda.get_rng_state_all()
        checkpoint['torch_rng_state'] = state

    def after_load_checkpoint(self, runner, checkpoint: dict) -> None:
        state = checkpoint.get('torch_rng_state')
        if not state or not getattr(runner, '_resume', False):
            return
        torch.set_rng_state(state['cpu'])
        cuda = state.get('cuda')
        if cuda and torch.cuda.is_available() and \
                len(cuda) == torch.cuda.device_count():
            torch.cuda.set_rng_state_all(cuda)
