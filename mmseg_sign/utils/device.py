"""A device argument checked before any work (``--device`` of the
tools)."""
import torch


def check_device(device) -> None:
    """``device`` names a device this machine has.

    Args:
        device (str | torch.device): e.g. ``'cpu'``, ``'cuda'``,
            ``'cuda:1'``.

    Raises:
        ValueError: an unknown device, or a GPU torch does not see.
    """
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as err:
        raise ValueError(f'device={device!r} is not a torch device '
                         f"({err}); use 'cpu' or 'cuda'.") from None
    if dev.type != 'cuda':
        return
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if count == 0:
        raise ValueError(
            f'device={device!r}, but torch sees no GPU here '
            '(torch.cuda.is_available() is False: no GPU, or a CPU build of '
            "torch): use device='cpu' (--device cpu).")
    if dev.index is not None and dev.index >= count:
        raise ValueError(f'device={device!r}, but torch sees {count} '
                         f'GPU(s) (cuda:0..cuda:{count - 1}).')
