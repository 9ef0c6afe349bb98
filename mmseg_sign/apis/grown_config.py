"""The config of a model grown by :func:`~mmseg_sign.apis.add_classes`:
the grown class list, its split and table, and the self-training run on
it."""
import copy
from collections.abc import Mapping
from typing import Sequence

import numpy as np
from mmengine.config import Config
from mmseg.registry import DATASETS

from ..structures.stage_plan import without_other_modes
from .outputs import AddClassesError, atomic_write


def _dataset_leaves(dataset):
    """The leaf dataset configs of a (concatenated, repeated) dataset."""
    if not isinstance(dataset, Mapping):
        return
    if 'datasets' in dataset:
        for d in dataset['datasets']:
            yield from _dataset_leaves(d)
    elif dataset.get('type') in ('RepeatDataset', 'ClassBalancedDataset'):
        yield from _dataset_leaves(dataset.get('dataset'))
    else:
        yield dataset


def unlisted_classes(cfg, names: Sequence[str]) -> dict:
    """``{dataset type: [names]}``: the ``names`` that a dataset of the
    config's loaders does not list in its ``METAINFO`` (mmseg refuses such a
    class list when it builds the dataset).

    Args:
        cfg (Config | dict): a config with dataloaders.
        names (Sequence[str]): class names.

    Returns:
        dict[str, list[str]]: empty when every dataset lists them.
    """
    found = {}
    for key in ('train_dataloader', 'val_dataloader', 'test_dataloader'):
        loader = cfg.get(key, None)
        if not isinstance(loader, Mapping):
            continue
        for leaf in _dataset_leaves(loader.get('dataset')):
            dtype = leaf.get('type')
            if dtype == 'ZeroShotDataset':
                inner = leaf.get('dataset')
                dtype = inner.get('type') if isinstance(
                    inner, Mapping) else leaf.get('dataset_type')
            cls = DATASETS.get(dtype) if isinstance(dtype, str) else dtype
            classes = getattr(cls, 'METAINFO', {}).get('classes') \
                if isinstance(cls, type) else None
            if classes is None:
                continue
            missing = [n for n in names if n not in classes]
            if missing:
                found[cls.__name__] = missing
    return found


def _set_split(dataset, classes, unseen) -> None:
    """Give a dataset config (and wrapped ones) the grown class list."""
    if not isinstance(dataset, dict):
        return
    if 'datasets' in dataset:  # ConcatDataset
        for d in dataset['datasets']:
            _set_split(d, classes, unseen)
        return
    if dataset.get('type') in ('RepeatDataset', 'ClassBalancedDataset'):
        _set_split(dataset['dataset'], classes, unseen)
        return
    for d in (dataset, dataset.get('dataset')):
        if isinstance(d, dict):
            d.pop('held_out_classes', None)
            d.pop('seen_classes', None)
            d.pop('unseen_classes', None)
            if isinstance(d.get('metainfo'), dict):
                for key in ('held_out_classes', 'seen_classes',
                            'unseen_classes', 'classes'):
                    d['metainfo'].pop(key, None)
    dataset['metainfo'] = dict(
        dataset.get('metainfo') or {},
        classes=list(classes),
        unseen_classes=list(unseen))


def grown_config(cfg, classes, unseen, table_path) -> Config:
    """The config with the grown class list: ``num_classes``, the table,
    the split of the head, the datasets and the evaluators.

    Args:
        cfg (Config): the model's config.
        classes (Sequence[str]): the grown class list.
        unseen (Sequence[str]): its unseen classes.
        table_path (str | None): the grown class-embedding table.

    Returns:
        Config: a new config.
    """
    cfg = copy.deepcopy(cfg)
    head = cfg.model.decode_head
    head.num_classes = len(classes)
    head.class_embeddings = table_path
    head.pop('held_out_classes', None)
    if head.get('unseen_classes') is not None:
        head.unseen_classes = list(unseen)
    for key in ('train_dataloader', 'val_dataloader', 'test_dataloader'):
        if cfg.get(key):
            _set_split(cfg[key].get('dataset'), classes, unseen)
    for key in ('val_evaluator', 'test_evaluator'):
        metrics = cfg.get(key)
        for metric in metrics if isinstance(metrics, list) else [metrics]:
            if isinstance(metric, dict) and metric.get('unseen_classes'):
                metric['unseen_classes'] = list(unseen)
    cfg.load_from = None
    cfg.resume = False
    return cfg


def self_train_config(cfg, stage: dict, load_from: str, work_dir: str,
                      seed: int) -> Config:
    """The grown config with a plan of one self-training ``stage`` that
    starts from ``load_from`` (the refit model).

    Args:
        cfg (Config): the grown config.
        stage (dict): the self-training stage (its ``iters``).
        load_from (str): the refit checkpoint.
        work_dir (str): the run's work dir.
        seed (int): its seed.

    Returns:
        Config: a new config.
    """
    cfg = copy.deepcopy(cfg)
    cfg.train_cfg.stages = [without_other_modes(stage)]
    cfg.load_from = load_from
    cfg.resume = False
    cfg.work_dir = work_dir
    cfg.randomness = dict(cfg.get('randomness') or {}, seed=seed)
    return cfg


def new_palette(count: int, seed: int = 0) -> list:
    """``count`` random colours for the added classes.

    Args:
        count (int): how many.
        seed (int): the colours' seed.

    Returns:
        list[list[int]]: RGB triples.
    """
    rng = np.random.default_rng(seed)
    return [list(map(int, rng.integers(0, 256, 3))) for _ in range(count)]


def _dump_config(cfg: Config, path: str) -> None:
    atomic_write(path, cfg.dump)


def check_not_grown(meta: dict, checkpoint, names, regrow: bool) -> None:
    """Refuse to grow a grown model unless ``regrow``: a second growth
    undoes much of the first (docs/add_classes.md, "Growing twice").

    Args:
        meta (dict): the checkpoint's ``meta`` (a grown model's has
            ``sign_added_classes`` and ``sign_added_from``).
        checkpoint (str): its path, for the message.
        names (Sequence[str]): the classes to add now.
        regrow (bool): grow it anyway.

    Raises:
        AddClassesError: naming the first growth and the one call that
        adds every class to the original model.
    """
    added = meta.get('sign_added_classes') if isinstance(meta, dict) \
        else None
    if not added or regrow:
        return
    origin = meta.get('sign_added_from', 'the original checkpoint')
    raise AddClassesError(
        f'{checkpoint} is a grown model: {list(added)} were added to '
        f'{origin}. Growing it again loses much of what the first growth '
        'learnt (docs/add_classes.md, "Growing twice"). Add all the '
        'classes in one call to the original model instead: '
        f'add_classes(CONFIG, {origin!r}, {[*added, *names]!r}, ...) '
        f"(tools/add_classes.py CONFIG {origin} --classes "
        f"{' '.join([*added, *names])}), or pass regrow=True "
        '(--regrow) to grow this model anyway.')


def check_lists_classes(cfg, key: str = 'test_dataloader') -> None:
    """The dataset of ``cfg[key]`` lists every class its metainfo names: a
    config that add_classes grew by a class outside the dataset's
    ``METAINFO`` serves inference only (mmseg refuses to build the dataset,
    with a traceback that does not say why).

    Args:
        cfg (Config): e.g. a grown config given to tools/test.py.
        key (str): the dataloader to check.

    Raises:
        ValueError: naming the dataset, the classes and what to do.
    """
    loader = cfg.get(key)
    dataset = loader.get('dataset') if isinstance(loader, Mapping) else None
    names = []
    for leaf in _dataset_leaves(dataset):
        for d in (leaf, leaf.get('dataset')):
            meta = d.get('metainfo') if isinstance(d, Mapping) else None
            if isinstance(meta, Mapping) and meta.get('classes'):
                names += [c for c in meta['classes'] if c not in names]
    missing = unlisted_classes({key: loader}, names) if names else {}
    if missing:
        raise ValueError(
            f'{key}: ' + '; '.join(f'{t} does not list {m}'
                                   for t, m in missing.items()) +
            ' (mmseg builds a dataset only with classes of its METAINFO). '
            'This config was grown by add_classes with a class outside the '
            'dataset: it serves inference (mmseg.apis.init_model, '
            'MMSegInferencer), not testing. To score the class, grow a model '
            'whose dataset lists it (docs/add_classes.md).')
