"""Where a run's random numbers start: the weights initialised on the CPU
(one seed, one start on every device) and, for the spread decomposition of
docs/toy_results.md, the initial weights or the model's own draws from
seeds of their own."""
import itertools
from typing import Optional

import torch
from mmengine.hooks import Hook
from mmengine.logging import print_log
from mmseg.registry import HOOKS

from ..runner.runner_state import unwrap_model


def _check_seed(name: str, value) -> None:
    # torch's generators take seeds of 64 bits (a larger one fails deep in
    # manual_seed: "Overflow when unpacking long long")
    if value is not None and (isinstance(value, bool)
                              or not isinstance(value, int) or value < 0
                              or value >= 2**64):
        raise ValueError(
            f'RandomSourcesHook: {name} must be None (the run seed\'s '
            f'stream) or an int in [0, 2**64), got {value!r}.')


def _reset(module) -> None:
    """Every parameter drawn again as at construction: children first,
    then the module's own ``reset_parameters`` (a module that sets its
    layers' initial values in ``__init__`` does it there, after its
    children exist, as construction does)."""
    for child in module.children():
        _reset(child)
    for name in ('reset_parameters', '_reset_parameters'):
        if callable(getattr(module, name, None)):
            getattr(module, name)()
            break


def on_cpu(model, init) -> None:
    """``init()`` with ``model`` on the CPU, then the model back on the
    device its first parameter (or buffer) was on."""
    first = next(itertools.chain(model.parameters(), model.buffers()), None)
    device = first.device if first is not None else torch.device('cpu')
    model.cpu()
    init()
    model.to(device)


@HOOKS.register_module()
class RandomSourcesHook(Hook):
    """One seed, one start: the weights are initialised on the CPU, then
    moved to the run's device, so a seed gives bit-identical initial
    weights on a CPU and a GPU (mmengine alone initialises after moving the
    model, from the GPU's generator).

    mmengine's ``Runner.train`` calls ``before_run`` hooks, then
    ``model.init_weights()`` (a no-op for a model initialised here), then
    loads or resumes a checkpoint. On a CPU run ``init_on_cpu`` changes
    nothing, bit for bit. No weights are re-initialised at a stage start
    (a stage switches optimizers and losses, never resets a module), so
    this is the run's only initialisation.

    For the spread decomposition (docs/toy_results.md) two sources can draw
    from seeds of their own, every other source staying on the run seed's
    stream (``randomness.seed``: data order, augmentation):

    * ``init_seed``: every module's parameters are drawn again as at
      construction (``reset_parameters``, children first), then
      ``init_weights``, from a CPU generator seeded with it; the run's own
      generator is left as it was.
    * ``draws_seed``: torch's generators (CPU and CUDA) are re-seeded with
      it before the first iteration, so the model's draws (the SIM's ``z``,
      dropout, MMD pixel samples, transfer's sampled labels) follow it. The
      data workers and samplers have generators of their own
      (``TorchRNGStateHook``, mmengine's ``worker_init_fn``), so the data
      does not change. A resumed run keeps the checkpoint's state.

    Config (in the SIGN schedule bases' ``default_hooks``)::

        default_hooks = dict(sign_random=dict(type='RandomSourcesHook'))
        # mmengine's behaviour: default_hooks.sign_random.init_on_cpu=False

    Args:
        init_on_cpu (bool): initialise on the CPU, then move back.
        init_seed (int, optional): draw the initial weights from this seed.
        draws_seed (int, optional): the model's draws from this seed.
    """
    priority = 'VERY_LOW'  # after the other hooks' before_run

    def __init__(self,
                 init_on_cpu: bool = True,
                 init_seed: Optional[int] = None,
                 draws_seed: Optional[int] = None):
        if not isinstance(init_on_cpu, bool):
            raise ValueError('RandomSourcesHook: init_on_cpu must be True or '
                             f'False, got {init_on_cpu!r}.')
        _check_seed('init_seed', init_seed)
        _check_seed('draws_seed', draws_seed)
        self.init_on_cpu = init_on_cpu
        self.init_seed = init_seed
        self.draws_seed = draws_seed

    def before_run(self, runner) -> None:
        model = unwrap_model(runner)
        if getattr(
                model, 'is_init',
                False) or not (self.init_on_cpu or self.init_seed is not None):
            return  # initialised already, or mmengine initialises
        if self.init_seed is None:
            on_cpu(model, model.init_weights)
            return

        def redraw():
            _reset(model)
            model.init_weights()

        with torch.random.fork_rng(devices=[]):  # the CPU's only
            torch.default_generator.manual_seed(self.init_seed)
            if self.init_on_cpu:
                on_cpu(model, redraw)
            else:
                redraw()
        print_log(
            f'RandomSourcesHook: initial weights drawn from '
            f'init_seed={self.init_seed}',
            logger='current')

    def before_train(self, runner) -> None:
        if self.draws_seed is None or runner.iter > 0:
            return  # the run seed's stream, or resumed (the checkpoint's)
        torch.default_generator.manual_seed(self.draws_seed)
        if torch.cuda.is_available():
            torch.cuda.manual_seed_all(self.draws_seed)
        print_log(
            f'RandomSourcesHook: the model draws from '
            f'draws_seed={self.draws_seed}',
            logger='current')
