"""Reading state dicts as mmengine's loader does."""
import re
from collections.abc import Mapping


def strip_module_prefix(state: Mapping) -> dict:
    """``state`` with a leading ``module.`` (a DDP-wrapped model's) taken
    off every key, as mmengine's ``load_checkpoint`` does.

    Args:
        state (Mapping): a state dict.

    Returns:
        dict: the same values under the unwrapped model's keys.
    """
    return {re.sub(r'^module\.', '', k): v for k, v in state.items()}
