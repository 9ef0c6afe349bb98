"""What a config says, read for the toy tables' runs (``tools/toy_table.py``):
its stage ends, the data it reads, a value at a ``--cfg-options`` key, a
sweep's points and a run's name in the results."""
import functools
import inspect
import os.path as osp
import threading

from mmengine.config import Config
from mmseg.registry import MODELS

from ..structures.stage_plan import STAGE_OPTIONS, StagePlan
from .toy_results import parse_cfg_options

#: mmengine resolves a config's ``mmseg::`` bases through pkg_resources,
#: which is not thread-safe: the runs' threads read configs one at a time
_CONFIG_READ = threading.Lock()


def read_config(path: str) -> Config:
    """``Config.fromfile(path)``, one thread at a time."""
    with _CONFIG_READ:
        return Config.fromfile(path)


def resolved_config(cfg_path, cfg_options=()) -> Config:
    cfg = read_config(cfg_path)
    if cfg_options:
        cfg.merge_from_dict(parse_cfg_options(cfg_options))
    return cfg


def stage_ends(cfg_path: str) -> dict:
    """``{stage name: last iteration}`` of the config's plan (the last
    stage of a name wins); ``{'end': None}`` without a plan. ``cfg_path``:
    a shipped config, or the one a run dumped in its work dir.

    Args:
        cfg_path (str): the config file.

    Returns:
        dict[str, int | None]: each stage's last iteration.
    """
    plan = StagePlan.from_config(read_config(cfg_path))
    if plan is None:
        return {'end': None}
    return {s['name']: plan.start(i) + s['iters'] for i, s in enumerate(plan)}


def dataset_folders(dataset: dict) -> list:
    """The folders a dataset config reads: ``data_root`` joined with each
    ``data_prefix`` entry (a wrapper's inner ``dataset`` too)."""
    folders = []
    inner = dataset.get('dataset')
    if isinstance(inner, dict):
        folders += dataset_folders(inner)
    root = dataset.get('data_root') or ''
    prefix = dataset.get('data_prefix') or {}
    if root or prefix:
        folders += [osp.join(root, p) for p in prefix.values() if p] or [root]
    return folders


def missing_data(cfg_path, cfg_options=()) -> list:
    """What a config's run would read and is not there: its training and
    validation folders and its class-embedding table, as ``'what: path'``
    (paths relative to the working directory, as tools/train.py reads
    them). Checked once for every config before any run starts.

    Args:
        cfg_path (str): the config.
        cfg_options (Sequence[str]): its ``--cfg-options``.

    Returns:
        list[str]: one entry per missing path.
    """
    cfg = resolved_config(cfg_path, cfg_options)
    missing = []
    for loader in ('train_dataloader', 'val_dataloader'):
        dataset = (cfg.get(loader) or {}).get('dataset') or {}
        missing += [
            f'{loader} folder {path}' for path in dataset_folders(dataset)
            if not osp.isdir(path)
        ]
    table = cfg.get('model', {}).get('decode_head', {}).get('class_embeddings')
    if isinstance(table, str) and not osp.isfile(table):
        missing.append(f'class-embedding table {table}')
    return missing


def data_options(cfg_path, data_root) -> list:
    """The ``--cfg-options`` that point a config at the toy data of
    ``data_root`` (none for ``None``: the config's own data).

    Args:
        cfg_path (str): the config.
        data_root (str | None): the toy dataset (and its class table).

    Returns:
        list[str]: ``KEY=VALUE`` items.
    """
    if data_root is None:
        return []
    options = []
    if takes_class_table(cfg_path):
        # a zero-shot head's table (a supervised one, FCN, has none)
        options.append(f'model.decode_head.class_embeddings='
                       f'{data_root}/class_embeddings.npz')
    return options + [
        f'{loader}.dataset.data_root={data_root}'
        for loader in ('train_dataloader', 'val_dataloader', 'test_dataloader')
    ]


def flat_options(prefix: str, settings: dict) -> list:
    """``PREFIX.KEY=VALUE`` items of a nested dict (``--cfg-options``)."""
    out = []
    for k, v in settings.items():
        if isinstance(v, dict):
            out += flat_options(f'{prefix}.{k}', v)
        else:
            out.append(f'{prefix}.{k}={v}')
    return out


def row_stem(cfg_path: str, amp_dtype=None, tag=None) -> str:
    """A config's name in the results: its file stem, ``+DTYPE`` with
    mixed precision, ``+TAG`` for runs told apart by ``--cfg-options``.

    Args:
        cfg_path (str): the config.
        amp_dtype (str, optional): its run's ``--amp-dtype``.
        tag (str, optional): e.g. ``'T2'`` for a temperature.

    Returns:
        str: the name, e.g. ``'sign_toy+bfloat16+T2'``.
    """
    stem = osp.splitext(osp.basename(cfg_path))[0]
    return '+'.join(x for x in (stem, amp_dtype, tag) if x)


@functools.lru_cache(maxsize=None)
def takes_class_table(cfg_path: str) -> bool:
    """Whether the config's head reads a class-embedding table (a zero-shot
    head's ``class_embeddings``; mmseg's FCN has none). Cached: the runs
    ask from worker threads, and reading a config is not thread-safe
    (:func:`.toy_table.train_runs` asks first, in the main thread)."""
    return bool(config_value(cfg_path, 'model.decode_head.class_embeddings'))


def _argument_default(module_cfg, name: str):
    """The default of argument ``name`` of the model module that
    ``module_cfg`` (a dict with a registered ``type``) builds; None where
    it has no such argument or no default."""
    if not isinstance(module_cfg, dict) or \
            not isinstance(module_cfg.get('type'), str):
        return None
    # (mmseg_sign's modules are registered: this module is in the package)
    cls = MODELS.get(module_cfg['type'])
    if cls is None:
        return None
    param = inspect.signature(cls.__init__).parameters.get(name)
    if param is None or param.default is inspect.Parameter.empty:
        return None
    return param.default


def config_value(cfg_path: str, key: str):
    """A config's value at a dotted ``--cfg-options`` key (list items by
    index, e.g. ``train_cfg.stages.2.temperature``).

    Args:
        cfg_path (str): the config.
        key (str): the dotted key.

    Returns:
        The value (``None`` where the key is absent). A stage option the
        plan leaves at its default (``train_cfg.stages.1.synth_weight``)
        has that default, as has an argument a model module's config
        leaves at its default (``model.decode_head.loss_kld_weight``:
        SIGNHead's 100).
    """
    node = read_config(cfg_path)
    parts = key.split('.')
    for i, part in enumerate(parts):
        try:
            node = node[int(part)] if isinstance(node, (list, tuple)) \
                else node[part]
        except (KeyError, IndexError, ValueError, TypeError):
            # a stage option not written in the plan: its default
            if parts[:2] == ['train_cfg', 'stages'] and i == 3 and \
                    len(parts) == 4 and isinstance(node, dict):
                return STAGE_OPTIONS.get(node.get('name'), {}).get(part)
            # an argument a model module's config leaves at its default
            if parts[0] == 'model' and i == len(parts) - 1:
                return _argument_default(node, part)
            return None
    return node


def sweep_points(spec: str) -> list:
    """The runs of a sweep ``KEY=V1,V2,...``: a tag and the
    ``--cfg-options`` item for each value. Every value gets its own runs,
    the config's own value included, so that the points of a curve are
    trained together, under the same settings (the thread count changes a
    run's floating-point sums).

    Args:
        spec (str): e.g. ``'train_cfg.stages.2.temperature=0.1,2'``.

    Returns:
        list[tuple[float, str, list[str]]]: ``(value, tag, cfg_options)``,
        tags like ``'temperature2'``.

    Raises:
        ValueError: a spec without ``=``, values or numbers.
    """
    key, _, values = spec.partition('=')
    if not key or not values:
        raise ValueError(f'--sweep {spec!r}: write KEY=V1,V2,... (e.g. '
                         'train_cfg.stages.2.temperature=0.1,1,10)')
    leaf = key.rsplit('.', 1)[-1]
    points = []
    for text in values.split(','):
        try:
            value = float(text)
        except ValueError:
            raise ValueError(f'--sweep {spec!r}: {text!r} is not a number '
                             '(a sweep is plotted against its values)')
        if any(value == p[0] for p in points):
            raise ValueError(f'--sweep {spec!r}: {text!r} repeats a value '
                             '(values compare as numbers: 1 = 1.0)')
        points.append((value, f'{leaf}{text}', [f'{key}={text}']))
    return points
