"""``init_model`` that refuses a checkpoint of another model.

mmseg's ``init_model`` loads with ``strict=False``: a checkpoint that does
not fit the config's model (another model, another class count, a run
changed by ``--cfg-options``) leaves the weights it lacks at their random
initialisation, with only a log line about it, and everything computed
with the model afterwards is meaningless. The analysis tools and the toy
report build their models through :func:`init_model_checked` instead
(``tools/test.py`` has ``StrictCheckpointHook``, the ONNX export
``load_model``); :func:`model_and_test_set` is their common start.
"""
from typing import Optional, Sequence, Union

from mmengine.config import Config
from mmengine.runner.checkpoint import _load_checkpoint_to_model

from ..engine.checkpoint_checks import checkpoint_mismatches, mismatch_message
from ..engine.hooks.strict_checkpoint_hook import CheckpointMismatchError
from ..utils.checkpoint import load_checkpoint_file


def init_model_checked(config: Union[str, Config],
                       checkpoint: str,
                       device: str = 'cpu',
                       cfg_options: Optional[dict] = None,
                       dataset_classes: Optional[Sequence[str]] = None):
    """mmseg's ``init_model(config, checkpoint, device)``, after checking
    that ``checkpoint`` holds exactly the weights of the config's model.

    Args:
        config (str | Config): the config the model was trained with.
        checkpoint (str): its checkpoint file.
        device (str): where the model goes.
        cfg_options (dict, optional): overrides merged into the config.
        dataset_classes (Sequence[str], optional): the classes of the data
            the model will see: their count must be the checkpoint's.

    Returns:
        nn.Module: the segmentor, in eval mode.

    Raises:
        CheckpointMismatchError: naming what does not fit and the fix.
    """
    from mmseg.apis import init_model
    name = config if isinstance(config, str) else (config.filename
                                                   or 'the config')
    cfg = Config.fromfile(config) if isinstance(config, str) else config
    if cfg_options:
        cfg.merge_from_dict(cfg_options)
    model = init_model(cfg, None, device=device)
    ckpt = load_checkpoint_file(checkpoint)
    problems = checkpoint_mismatches(model, ckpt, dataset_classes)
    if problems:
        raise CheckpointMismatchError(
            mismatch_message(checkpoint, name, ckpt, problems) + '.')
    _load_checkpoint_to_model(model, ckpt, strict=False)  # BN counters
    meta = ckpt.get('meta') or {}
    if meta.get('dataset_meta'):  # as init_model keeps it
        model.dataset_meta = meta['dataset_meta']
    return model


def model_and_test_set(config: str,
                       checkpoint: str,
                       cfg_options: Optional[dict] = None,
                       device: str = 'cpu') -> tuple:
    """An analysis tool's start: the config with its ``--cfg-options``,
    its test dataset and the model of ``checkpoint`` checked against both
    (:func:`init_model_checked`).

    Args:
        config (str): the config file.
        checkpoint (str): its checkpoint file.
        cfg_options (dict, optional): ``--cfg-options`` (DictAction's).
        device (str): where the model goes.

    Returns:
        tuple: ``(cfg, model, dataset)``.

    Raises:
        SystemExit: ``error: ...`` when the checkpoint does not fit.
    """
    from mmengine.registry import init_default_scope
    from mmseg.registry import DATASETS

    from ..utils.cli import merge_cfg_options
    cfg = Config.fromfile(config)
    merge_cfg_options(cfg, cfg_options)
    init_default_scope(cfg.get('default_scope', 'mmseg'))
    dataset = DATASETS.build(cfg.test_dataloader.dataset)
    try:
        model = init_model_checked(
            cfg,
            checkpoint,
            device,
            dataset_classes=dataset.metainfo['classes'])
    except CheckpointMismatchError as err:
        raise SystemExit(f'error: {err}') from None
    return cfg, model, dataset
