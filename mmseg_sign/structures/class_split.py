"""The seen / unseen split of a dataset's classes: the one reading of it.

A zero-shot dataset resolves its split from ``metainfo`` (names or indices,
either side may be left to be the complement); the head, the metric, the
hooks and the checkpoint checks read the same functions, and a trained
checkpoint says its split through the head's ``decode_head.unseen_mask``
buffer (or ``meta.dataset_meta``, which mmengine writes).
"""
import copy
from collections.abc import Mapping
from typing import List, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np

from ..utils.state_dict import strip_module_prefix

ClassRefs = Sequence[Union[str, int]]


def resolve_class_refs(refs: ClassRefs, classes: Sequence[str],
                       what: str) -> List[str]:
    """Turn class names or indices into class names, failing clearly.

    Args:
        refs: class names or 0-based indices into ``classes``.
        classes: the dataset's class names.
        what: a label for error messages, e.g. ``'unseen_classes'``.
    """
    if isinstance(refs, (str, int)):
        refs = [refs]
    names = []
    for ref in refs:
        if isinstance(ref, (int, np.integer)) and not isinstance(ref, bool):
            if not 0 <= ref < len(classes):
                raise ValueError(
                    f'{what}: class index {ref} is out of range; the dataset '
                    f'has {len(classes)} classes (0..{len(classes) - 1}).')
            names.append(classes[ref])
        elif isinstance(ref, str):
            names.append(_match_class_name(ref, classes, what))
        else:
            raise TypeError(f'{what}: expected class names or indices, got '
                            f'{ref!r} of type {type(ref).__name__}.')
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f'{what}: classes listed twice: {duplicates}.')
    return names


def _match_class_name(ref: str, classes: Sequence[str], what: str) -> str:
    """The dataset's spelling of the class ``ref``: an exact match, else
    the one class whose name equals ``ref`` after ``str.strip()`` (mmseg's
    ADE20K spells ``'bed '`` with a trailing space)."""
    if ref in classes:
        return ref
    matches = [c for c in classes if c.strip() == ref.strip()]
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        raise ValueError(f'{what}: class name {ref!r} is ambiguous: the '
                         f'classes {matches} differ only in white space.')
    raise ValueError(f'{what}: unknown class name {ref!r}. Valid names are: '
                     f'{", ".join(classes)}.')


def resolve_split(classes: Sequence[str],
                  seen: Optional[ClassRefs] = None,
                  unseen: Optional[ClassRefs] = None):
    """Resolve a split given by class names or indices.

    Either list may be omitted (it is then the complement of the other); if
    both are given they must not overlap and must together cover every class.

    Args:
        classes (Sequence[str]): every class, in the dataset's order.
        seen (Sequence[str | int], optional): seen classes.
        unseen (Sequence[str | int], optional): unseen classes.

    Returns:
        tuple[tuple[str], tuple[str]]: ``(seen_names, unseen_names)`` in
        class order. A ValueError names an unknown, doubled, overlapping or
        missing class.
    """
    classes = list(classes)
    if seen is None and unseen is None:
        raise ValueError('A zero-shot dataset needs `unseen_classes` (or '
                         '`seen_classes`) in its metainfo.')
    seen_n = None if seen is None else resolve_class_refs(
        seen, classes, 'seen_classes')
    unseen_n = None if unseen is None else resolve_class_refs(
        unseen, classes, 'unseen_classes')
    if seen_n is not None and unseen_n is not None:
        overlap = [c for c in seen_n if c in unseen_n]
        if overlap:
            raise ValueError(f'Classes {overlap} are listed as both seen and '
                             'unseen; give each class to one group only.')
        missing = [c for c in classes if c not in seen_n + unseen_n]
        if missing:
            raise ValueError(
                f'Classes {missing} are neither seen nor unseen; list them '
                'in one group, or give only `unseen_classes` and let the '
                'rest be seen.')
    elif seen_n is None:
        seen_n = [c for c in classes if c not in unseen_n]
    else:
        unseen_n = [c for c in classes if c not in seen_n]
    if not seen_n:
        raise ValueError('The seen set is empty: a zero-shot model needs at '
                         'least one seen class to train on.')
    order = {c: i for i, c in enumerate(classes)}
    return (tuple(sorted(seen_n, key=order.get)),
            tuple(sorted(unseen_n, key=order.get)))


_SPLIT_KEYS = ('seen_classes', 'unseen_classes')
#: the ``metainfo`` keys a zero-shot dataset reads (mmseg's and the split);
#: another one would be kept and never read, so a misspelled key
#: (``unseen_class``) is an error
METAINFO_KEYS = ('classes', 'palette', 'label_map', 'reduce_zero_label',
                 *_SPLIT_KEYS, 'held_out_classes')


def split_into_metainfo(metainfo: Optional[dict], where: str,
                        **split) -> Optional[dict]:
    """Put a split given as dataset arguments into ``metainfo``.

    Args:
        metainfo (dict, optional): the dataset's ``metainfo`` argument.
        where (str): how errors name the dataset.
        **split: ``seen_classes`` / ``unseen_classes`` (``None``: not
            given).

    Returns:
        dict | None: ``metainfo`` with the given lists added; a ValueError
        if it already holds a different value.
    """
    metainfo = copy.deepcopy(dict(metainfo)) if metainfo else {}
    unknown = sorted(set(metainfo) - set(METAINFO_KEYS))
    if unknown:
        raise ValueError(
            f'{where}: unknown metainfo keys {unknown}; a zero-shot '
            f'dataset reads {list(METAINFO_KEYS)} (e.g. metainfo=dict('
            "unseen_classes=['cat', 'sofa']).")
    for key in _SPLIT_KEYS:
        value = split.get(key)
        if value is None:
            continue
        if isinstance(value, (str, int)):
            value = [value]
        if metainfo.get(key) is not None:
            given = metainfo[key]
            given = [given] if isinstance(given, (str, int)) else list(given)
            if given != list(value):
                raise ValueError(
                    f'{where}: {key} given twice with different values: '
                    f'{key}={list(value)} and metainfo.{key}={given}; '
                    'set it once.')
        metainfo[key] = list(value)
    return metainfo or None


def _as_list(refs) -> list:
    """``refs`` as a list; one name (a string) is one class, not its
    characters."""
    if refs is None:
        return []
    if isinstance(refs, (str, int)):
        return [refs]
    return list(refs)


def checkpoint_unseen_classes(checkpoint, classes=None):
    """The unseen classes a checkpoint was trained with, as names, or
    ``None`` if it does not say.

    Read from the head's ``decode_head.unseen_mask`` buffer (what the model
    uses at test time), named with ``meta.dataset_meta.classes`` (or
    ``classes`` when the checkpoint has none); else from
    ``meta.dataset_meta.unseen_classes`` (mmengine saves the training
    dataset's metainfo there). An all-False mask counts as not set.

    Args:
        checkpoint (dict): a loaded checkpoint (or a bare state dict).
        classes (Sequence[str], optional): names for the mask's rows when
            the checkpoint has none.

    Returns:
        tuple[str] | None: the unseen class names.
    """
    if not isinstance(checkpoint, Mapping):
        return None
    meta = checkpoint.get('meta')
    dataset_meta = meta.get('dataset_meta') if isinstance(meta, Mapping) \
        else None
    dataset_meta = dataset_meta if isinstance(dataset_meta, Mapping) else {}
    names = dataset_meta.get('classes') or classes
    state = checkpoint.get('state_dict', checkpoint)
    mask = strip_module_prefix(state).get('decode_head.unseen_mask') \
        if isinstance(state, Mapping) else None
    if mask is not None and names is not None and hasattr(mask, 'tolist'):
        flags = [bool(x) for x in mask.flatten().tolist()]
        # all False: the split was never set (a head built without one)
        if len(flags) == len(names) and any(flags):
            return tuple(n for n, f in zip(names, flags) if f)
    unseen = dataset_meta.get('unseen_classes')
    return None if unseen is None else tuple(unseen)


class ClassSplit(NamedTuple):
    """A resolved split: every class name in order, and the unseen ones.

    Build it with :meth:`resolve` (names or indices, checked) or
    :meth:`from_checkpoint`; compare two with :meth:`same_as`.
    """
    classes: Tuple[str, ...]
    unseen: Tuple[str, ...]

    @classmethod
    def resolve(cls,
                classes: Sequence[str],
                seen: Optional[ClassRefs] = None,
                unseen: Optional[ClassRefs] = None) -> 'ClassSplit':
        """Args:
            classes (Sequence[str]): every class, in the dataset's order.
            seen, unseen (Sequence[str | int], optional): class names or
                0-based indices; one may be omitted (the complement).

        Returns:
            ClassSplit: the split, unseen names in class order.
        """
        return cls(tuple(classes), resolve_split(classes, seen, unseen)[1])

    @classmethod
    def from_checkpoint(
            cls,
            checkpoint,
            classes: Optional[Sequence[str]] = None) -> Optional['ClassSplit']:
        """The split a checkpoint was trained with.

        Args:
            checkpoint (dict): a loaded checkpoint.
            classes (Sequence[str], optional): the class names when the
                checkpoint has none (:func:`checkpoint_unseen_classes`).

        Returns:
            ClassSplit | None: ``None`` if the checkpoint does not say.
        """
        unseen = checkpoint_unseen_classes(checkpoint, classes)
        if unseen is None:
            return None
        meta = checkpoint.get('meta') if isinstance(checkpoint, Mapping) \
            else None
        names = (meta.get('dataset_meta') or {}).get('classes') \
            if isinstance(meta, Mapping) else None
        return cls(tuple(names or classes or unseen), tuple(unseen))

    @property
    def seen(self) -> Tuple[str, ...]:
        """The seen class names, in class order."""
        return tuple(c for c in self.classes if c not in self.unseen)

    @property
    def unseen_ids(self) -> List[int]:
        """0-based indices of the unseen classes."""
        return [i for i, c in enumerate(self.classes) if c in self.unseen]

    def same_as(self, unseen: Sequence[str]) -> bool:
        """Whether ``unseen`` names the same unseen classes.

        Args:
            unseen (Sequence[str]): unseen class names, in any order.

        Returns:
            bool: the same set of names.
        """
        return set(self.unseen) == set(unseen)
