"""Context-33 label maps from mmseg's 59-class Context maps."""
import numpy as np

from .class_names import CONTEXT33_CLASSES

#: Context-33 names spelled differently in mmseg's 59-class list.
CONTEXT59_NAMES = {'diningtable': 'table'}


def context59_name(name33: str) -> str:
    """The 59-class name of a Context-33 class.

    Args:
        name33 (str): a class of ``CONTEXT33_CLASSES``.

    Returns:
        str: its name in mmseg's 59-class list.
    """
    return CONTEXT59_NAMES.get(name33, name33)


def context59_to_33_lut(ignore_index: int = 255) -> np.ndarray:
    """Look-up table ``[256]`` from a 59-class Context label value to the
    33-class protocol: mmseg's maps hold 0 = background and 1..59 in
    ``PascalContextDataset59`` order; matching names get their 0-based
    33-class index, every other value becomes ``ignore_index``.

    Args:
        ignore_index (int): the value of classes outside the 33.

    Returns:
        np.ndarray: uint8 ``[256]``.
    """
    from mmseg.datasets import PascalContextDataset59
    classes59 = PascalContextDataset59.METAINFO['classes']
    names59 = [context59_name(c) for c in CONTEXT33_CLASSES]
    missing = [c for c in names59 if c not in classes59]
    if missing:
        raise ValueError(f'Context-33 classes {missing} have no match in '
                         'the 59-class list.')
    lut = np.full(256, ignore_index, dtype=np.uint8)
    for index59, name in enumerate(classes59, start=1):
        if name in names59:
            lut[index59] = names59.index(name)
    return lut
