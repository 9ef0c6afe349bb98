"""Initialise and draw on the CPU: a GPU run of a seed starts from the CPU
run's weights and draws its numbers (docs/gpu.md)."""
from mmengine.hooks import Hook
from mmseg.registry import HOOKS

from ...utils.random_draws import pinned_randomness
from ..runner.runner_state import unwrap_model
from .random_sources_hook import on_cpu


@HOOKS.register_module()
class CPURandomnessHook(Hook):
    """A diagnostic for device parity: with it, a run on a GPU initialises
    its weights and draws every random number of the model (the SIM's
    ``z``, dropout masks, MMD pixel samples, transfer's labels and ``z``)
    from torch's CPU generator, as a CPU run of the same seed does, and
    moves them to the GPU. A GPU run then differs from the CPU run only by
    what its kernels compute (float rounding, TF32, kernel choice); on a
    CPU the hook changes nothing, bit for bit (tested).

    The initialisation on the CPU is every SIGN schedule's default now
    (``RandomSourcesHook``, ``default_hooks.sign_random``); this hook does
    it too, for configs without that hook: the weights are initialised on
    the CPU in ``before_run`` (before mmengine's own call, then a no-op
    for an initialised model) and moved back. The draws go through
    :func:`mmseg_sign.utils.random_draws.pinned_randomness` from
    ``before_train`` to ``after_train``. Slower on a GPU (every draw
    crosses the bus): for checks, not for training runs.

    Config: ``custom_hooks = [..., dict(type='CPURandomnessHook')]``.

    Args:
        init (bool): initialise the weights on the CPU.
        draws (bool): draw the model's random numbers on the CPU.
    """
    priority = 'VERY_LOW'

    def __init__(self, init: bool = True, draws: bool = True):
        self.init = init
        self.draws = draws
        self._pinned = None

    def before_run(self, runner) -> None:
        model = unwrap_model(runner)
        if not self.init or getattr(model, 'is_init', False):
            return
        on_cpu(model, model.init_weights)

    def before_train(self, runner) -> None:
        if self.draws and self._pinned is None:
            self._pinned = pinned_randomness(None, draw_dtype=None)
            self._pinned.__enter__()

    def after_train(self, runner) -> None:
        if self._pinned is not None:
            self._pinned.__exit__(None, None, None)
            self._pinned = None

    after_run = after_train  # also when training stopped on an error
