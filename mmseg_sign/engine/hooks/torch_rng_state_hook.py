"""Keep torch's random state in checkpoints so that a resumed run draws the
same ``z``, dropout masks and pixel samples as an uninterrupted one."""
import logging

import torch
from mmengine.dist import all_gather, get_rank, get_world_size
from mmengine.hooks import Hook
from mmengine.logging import print_log
from mmseg.registry import HOOKS
from torch.utils.data import DataLoader

# a private generator per loop's dataloader, seeded from the run seed; read
# through the Runner's private attributes on purpose: its public properties
# would build a loop that is still a config (a test loop during training)
_LOOPS = ('_train_loop', '_val_loop', '_test_loop')

# the way out of every damaged-state error
_FIX = ('Resume from a checkpoint saved by TorchRNGStateHook, or delete its '
        '`torch_rng_state` key (the run then resumes with fresh draws).')


def as_rng_state(state, name: str = 'RNG state') -> torch.Tensor:
    """``state`` as ``torch.set_rng_state`` / ``torch.cuda.set_rng_state``
    take it: a contiguous CPU ``uint8`` tensor, whatever loading did to it.

    mmengine's ``--resume`` loads a checkpoint onto the run's device
    (``map_location`` = the GPU), which turns a saved generator state into
    a CUDA byte tensor, and both setters refuse anything but a CPU
    ``ByteTensor``. A state cast to another integer dtype (values 0-255)
    or given as a list / array is converted back too.

    Args:
        state (Tensor | Sequence[int] | np.ndarray): a saved state.
        name (str): what the state is, for the error message.

    Returns:
        Tensor: the state as a contiguous CPU ``uint8`` tensor.

    Raises:
        ValueError: ``state`` is not a 1-d tensor (or sequence) of bytes.
    """
    try:
        if isinstance(state, (str, bytes, dict)) or state is None:
            raise TypeError
        t = torch.as_tensor(state.detach() if isinstance(state, torch.Tensor
                                                         ) else state).cpu()
    except (TypeError, ValueError, RuntimeError):
        raise ValueError(
            f'The checkpoint\'s {name} is not a generator state (a byte '
            f'tensor): it is {type(state).__name__} {str(state)[:40]!r}. ' +
            _FIX) from None
    if t.dim() != 1 or not t.numel():
        raise ValueError(
            f'The checkpoint\'s {name} is not a generator state (a 1-d '
            f'byte tensor): its shape is {tuple(t.shape)}. ' + _FIX)
    if t.dtype != torch.uint8:
        out_of_range = t.numel() and bool(((t < 0) | (t > 255)).any())
        if t.is_floating_point() or t.is_complex() or out_of_range:
            raise ValueError(
                f'The checkpoint\'s {name} is not a generator state (a byte '
                f'tensor): it is a {t.dtype} tensor of shape '
                f'{tuple(t.shape)}. ' + _FIX)
        t = t.to(torch.uint8)
    return t.contiguous()


def _restore(setter, state, name: str) -> None:
    """``setter(as_rng_state(state))``; a state of the wrong length (torch
    checks it) is a ValueError naming it, not torch's RuntimeError."""
    state = as_rng_state(state, name)
    try:
        setter(state)
    except RuntimeError as err:
        raise ValueError(
            f'The checkpoint\'s {name} ({state.numel()} bytes) is not a '
            f'state of this generator ({err}). ' + _FIX) from None


@HOOKS.register_module()
class TorchRNGStateHook(Hook):
    """Saves the CPU (and CUDA) generator states with every checkpoint and
    restores them on ``--resume``.

    The data pipeline draws from numpy, whose state mmengine reproduces by
    re-seeding and replaying the sampler on resume; the model's own draws
    (SIGN's latent ``z``, dropout, MMD pixel sampling) use torch's global
    generator, which mmengine does not save.

    It also gives every dataloader of the run its own ``torch.Generator``
    (seeded from the run seed), so that creating a dataloader iterator no
    longer draws its worker base seed from the global generator. With
    ``persistent_workers=True`` the validation iterator is created once per
    process, at the first validation: in an uninterrupted run at the first
    stage end, in a resumed one at the first validation after the resume
    point, so that draw shifted the model's random stream of a resumed run
    (and a non-persistent training loader re-created while mmengine replays
    the finished iterations would do the same). The worker processes are
    seeded by mmengine's ``worker_init_fn`` from the run seed, so the base
    seed does not change the data.

    In distributed training every rank draws its own stream (different
    data, different draw counts), and only rank 0 saves the checkpoint: the
    ranks' states are gathered after every iteration (before the
    ``CheckpointHook``, hence priority ``LOW``) and each rank restores its
    own (rank 0's for every rank if the world size changed).
    """
    priority = 'LOW'  # before CheckpointHook (VERY_LOW) in after_train_iter

    def __init__(self):
        self._gathered = None  # (iteration, per-rank state dicts)

    @staticmethod
    def _cuda_in_use() -> bool:
        return torch.cuda.is_available() and torch.cuda.is_initialized()

    @staticmethod
    def _own_generators(runner) -> None:
        """A private generator for each built loop's dataloader that has
        none (idempotent; a loop still given as a config is skipped)."""
        seed = runner.seed if isinstance(runner.seed, int) else 0
        for offset, name in enumerate(_LOOPS):
            loader = getattr(getattr(runner, name, None), 'dataloader', None)
            if isinstance(loader, DataLoader) and loader.generator is None:
                loader.generator = torch.Generator().manual_seed(
                    (seed + offset) % 2**63)

    # every dataloader mmengine builds exists by ``before_run``; the later
    # calls only cover loops built afterwards (before their first iterator)
    def before_run(self, runner) -> None:
        self._own_generators(runner)

    def before_train(self, runner) -> None:
        self._own_generators(runner)

    def before_val_epoch(self, runner) -> None:
        self._own_generators(runner)

    def before_test_epoch(self, runner) -> None:
        self._own_generators(runner)

    def after_train_iter(self,
                         runner,
                         batch_idx,
                         data_batch=None,
                         outputs=None) -> None:
        """Every rank's state, for rank 0's checkpoint (collective)."""
        if get_world_size() == 1:
            return
        states = dict(cpu=all_gather(torch.get_rng_state()))
        if self._cuda_in_use():
            states['cuda'] = all_gather(torch.cuda.get_rng_state())
        self._gathered = (runner.iter, states)

    def before_save_checkpoint(self, runner, checkpoint: dict) -> None:
        state = dict(cpu=torch.get_rng_state())
        if self._cuda_in_use():
            state['cuda'] = torch.cuda.get_rng_state_all()
        if self._gathered is not None and self._gathered[0] == runner.iter:
            ranks = self._gathered[1]
            state['cpu_ranks'] = [t.cpu() for t in ranks['cpu']]
            if 'cuda' in ranks:
                state['cuda_ranks'] = [t.cpu() for t in ranks['cuda']]
        checkpoint['torch_rng_state'] = state

    def after_load_checkpoint(self, runner, checkpoint: dict) -> None:
        """Restore this rank's CPU and CUDA generator states on
        ``--resume``, as CPU byte tensors whatever device the checkpoint
        was loaded to (:func:`as_rng_state`).

        Across devices: the CPU generator is always restored (a CPU run
        resumed on a GPU, or a GPU run on a CPU, continues the CPU stream
        exactly); a CUDA state is restored only where the run has as many
        GPUs (ranks) as the checkpoint. Otherwise the draws the model made
        on the GPU now come from another generator, so the resumed run is
        a valid continuation but not bit-identical to an uninterrupted
        one; the log says so."""
        # runner._resume: also set for a Runner built in Python without a
        # config (whose cfg has no `resume`)
        if not getattr(runner, '_resume', False):
            return
        state = checkpoint.get('torch_rng_state')
        if state is None:
            print_log(
                'TorchRNGStateHook: the checkpoint holds no torch random '
                'state (saved without this hook): the run resumes correctly, '
                'but its random draws (z, dropout, pixel samples) differ '
                'from those of an uninterrupted run.',
                logger='current',
                level=logging.WARNING)
            return
        if not isinstance(state, dict) or 'cpu' not in state:
            raise ValueError(
                'The checkpoint\'s torch_rng_state is not the dict '
                'TorchRNGStateHook saves (with a `cpu` state): it is '
                f'{type(state).__name__} {str(state)[:40]!r}. Delete the '
                'key (the run then resumes with fresh draws).')
        rank, world_size = get_rank(), get_world_size()
        cpu_ranks = state.get('cpu_ranks')
        cpu = cpu_ranks[rank] if isinstance(cpu_ranks, (list, tuple)) and \
            len(cpu_ranks) == world_size else state['cpu']
        _restore(torch.set_rng_state, cpu, 'CPU RNG state')
        cuda_ranks = state.get('cuda_ranks')
        cuda_here = torch.cuda.is_available()
        if cuda_ranks and len(cuda_ranks) == world_size and cuda_here:
            _restore(torch.cuda.set_rng_state, cuda_ranks[rank],
                     'CUDA RNG state')
            return
        cuda = state.get('cuda')
        if cuda and cuda_here and len(cuda) == torch.cuda.device_count():
            for device, one in enumerate(cuda):
                _restore(
                    lambda t, d=device: torch.cuda.set_rng_state(t, d),
                    one,
                    f'CUDA RNG state of GPU {device}')
        elif cuda or (cuda_here and world_size == 1):
            saved = f'{len(cuda)} CUDA generator state(s)' if cuda else \
                'no CUDA generator state (a CPU run)'
            here = f'{torch.cuda.device_count()} GPU(s)' if cuda_here \
                else 'no GPU'
            print_log(
                f'TorchRNGStateHook: the checkpoint holds {saved}, this run '
                f'has {here}: the CPU generator is restored, the CUDA one '
                'is not; the run continues correctly but its random draws '
                'on the GPU (z, dropout, pixel samples) differ from an '
                'uninterrupted run (bit-exact resume needs the same '
                'device kind).',
                logger='current')
