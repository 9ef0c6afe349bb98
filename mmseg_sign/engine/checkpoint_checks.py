"""Does a checkpoint fit a model and its test split? One line per kind of
problem, for ``StrictCheckpointHook`` (tools/test.py), ``add_classes`` and
the ONNX export."""
from collections.abc import Mapping

from mmengine.model import BaseTTAModel, is_model_wrapper

from ..structures.class_split import checkpoint_unseen_classes, resolve_split
from ..utils.state_dict import strip_module_prefix

SHOWN_KEYS = 5  # keys named per kind of mismatch
# weights that a published checkpoint (meta['sign_inference_only'], see
# tools/publish_model.py) may lack: modules inference does not run
INFERENCE_UNUSED_PREFIXES = ('decode_head.generator.',
                             'decode_head.discriminator.')


def _some(keys) -> str:
    keys = list(keys)
    more = len(keys) - SHOWN_KEYS
    return ', '.join(
        keys[:SHOWN_KEYS]) + (f' (and {more} more)' if more > 0 else '')


def _shape(value) -> list:
    return list(value.shape)


def checkpoint_mismatches(model,
                          checkpoint,
                          dataset_classes=None,
                          ignore_shapes: tuple = (),
                          inference: bool = True) -> list:
    """What keeps ``checkpoint`` from loading exactly into ``model``, one
    line per kind of problem (empty: it matches).

    Compares as mmengine's loader does: the weights are
    ``checkpoint['state_dict']`` (or the checkpoint itself) with a
    ``module.`` prefix stripped, the model is unwrapped from its wrappers
    (DDP, TTA), and BN's ``num_batches_tracked`` may be absent. Also
    compares the class count of the dataset the checkpoint was trained on
    (``meta.dataset_meta``, written by mmengine) with the test dataset's.

    Args:
        model (nn.Module): the model (wrappers are taken off).
        checkpoint (dict): a loaded checkpoint.
        dataset_classes (Sequence[str], optional): the test dataset's.
        ignore_shapes (tuple[str]): key suffixes whose shapes may differ
            (a placeholder class table awaiting the checkpoint's).
        inference (bool): the model only infers: a published checkpoint
            (``meta.sign_inference_only``) may lack G and D.

    Returns:
        list[str]: one line per kind of problem; empty: it matches.
    """
    while is_model_wrapper(model) or isinstance(model, BaseTTAModel):
        model = model.module
    if not isinstance(checkpoint, Mapping):
        return [
            f'it holds a {type(checkpoint).__name__}, not a dict with '
            'a state_dict'
        ]
    state = checkpoint.get('state_dict', checkpoint)
    if not isinstance(state, Mapping):
        return [
            f"its 'state_dict' is a {type(state).__name__}, not a dict "
            'of tensors'
        ]
    state = strip_module_prefix(state)
    expected = model.state_dict()
    problems = []
    missing = [
        k for k in expected
        if k not in state and 'num_batches_tracked' not in k
    ]
    meta = checkpoint.get('meta')
    if inference and isinstance(meta, Mapping) and \
            meta.get('sign_inference_only'):
        # tools/publish_model.py: G and D's GAN head are left out on
        # purpose (inference does not run them)
        missing = [
            k for k in missing if not k.startswith(INFERENCE_UNUSED_PREFIXES)
        ]
    if missing:
        total = sum('num_batches_tracked' not in k for k in expected)
        problems.append(
            f'missing from the checkpoint: {len(missing)} of the model\'s '
            f'{total} weight tensors: {_some(missing)}')
    unexpected = [k for k in state if k not in expected]
    if unexpected:
        problems.append(
            f'unexpected in the checkpoint (not in the model): '
            f'{len(unexpected)} weight tensor(s): {_some(unexpected)}')
    mismatched = [
        (k, _shape(state[k]), _shape(v)) for k, v in expected.items()
        if k in state and hasattr(state[k], 'shape') and hasattr(v, 'shape')
        and _shape(state[k]) != _shape(v) and not k.endswith(ignore_shapes)
    ]
    if mismatched:
        problems.append(
            f'size mismatch: {len(mismatched)} weight tensor(s): ' +
            _some(f'{k} (checkpoint {a}, model {b})'
                  for k, a, b in mismatched))
        seg = [(a, b) for k, a, b in mismatched
               if k.endswith('conv_seg.weight') and a and b]
        if seg:
            problems.append(
                f'the checkpoint\'s classifier has {seg[0][0][0]} outputs, '
                f"the model's {seg[0][1][0]}: it was trained for another "
                'class count (decode_head.num_classes)')
    meta = checkpoint.get('meta')
    trained = meta.get('dataset_meta') if isinstance(meta, Mapping) else None
    trained = trained.get('classes') if isinstance(trained, Mapping) \
        else None
    if trained is not None and dataset_classes is not None:
        if len(trained) != len(dataset_classes):
            problems.append(
                f'the checkpoint was trained on {len(trained)} classes, the '
                f'test dataset has {len(dataset_classes)}')
        else:  # as many, but others (a toy model on CamVid): wrong names
            differ = [(i, a, b)
                      for i, (a,
                              b) in enumerate(zip(trained, dataset_classes))
                      if str(a).strip() != str(b).strip()]
            if differ:
                i, a, b = differ[0]
                problems.append(
                    f'the checkpoint was trained on other classes than the '
                    f'test dataset\'s ({len(differ)} of {len(trained)} '
                    f'differ; first: #{i} {a!r} vs {b!r}): its predictions '
                    'would be scored under the wrong names')
    return problems


def mismatch_message(checkpoint_path: str, config_path: str, checkpoint,
                     problems: list) -> str:
    """What :func:`checkpoint_mismatches` found, as the start of an error:
    the problems, then "... the config this checkpoint was trained with"
    and the run that wrote it, for the caller to end (``.`` or the way out
    its tool offers).

    Args:
        checkpoint_path (str): the checkpoint file.
        config_path (str): the config of the model.
        checkpoint (dict): the loaded checkpoint (its ``meta``).
        problems (list[str]): :func:`checkpoint_mismatches`' lines.

    Returns:
        str: the message, without a final full stop.
    """
    meta = checkpoint.get('meta') if isinstance(checkpoint, Mapping) \
        else None
    run = meta.get('experiment_name') if isinstance(meta, Mapping) else None
    return (f'The checkpoint {checkpoint_path} does not match the model of '
            f'{config_path}:\n  - ' + '\n  - '.join(problems) +
            '\nUse the config this checkpoint was trained with' +
            (f" (it was written by the run {run!r}; its meta['cfg'] holds "
             'that config)' if run else ''))


def checkpoint_split_mismatch(checkpoint, metainfo) -> str:
    """A line naming both splits when the checkpoint's unseen classes differ
    from the test dataset's (``metainfo['unseen_classes']``); empty when
    they agree or either side does not say.

    Args:
        checkpoint (dict): a loaded checkpoint.
        metainfo (dict): the test dataset's metainfo.

    Returns:
        str: the problem, or ``''``.
    """
    if not isinstance(metainfo, Mapping) or \
            metainfo.get('unseen_classes') is None:
        return ''
    dataset_unseen = tuple(metainfo['unseen_classes'])
    trained = checkpoint_unseen_classes(checkpoint, metainfo.get('classes'))
    if trained is None or set(trained) == set(dataset_unseen):
        return ''
    return (f'the checkpoint was trained with the unseen classes {trained} '
            '(its decode_head.unseen_mask / meta.dataset_meta), the test '
            f'dataset (test_dataloader.dataset) has {dataset_unseen}')


def evaluator_split_mismatches(checkpoint,
                               metainfo,
                               evaluator,
                               where: str = 'test_evaluator') -> list:
    """Lines naming each metric of ``evaluator`` that sets its own split
    (``seen_classes`` / ``unseen_classes``, e.g. ``--cfg-options
    test_evaluator.unseen_classes=[...]``) other than the checkpoint's,
    or, when the checkpoint does not say, the dataset's
    (``metainfo['unseen_classes']``). Empty when they agree or nothing
    says.

    Args:
        checkpoint (dict): a loaded checkpoint.
        metainfo (dict): the test dataset's metainfo.
        evaluator (dict | list): the evaluator config.
        where (str): its config key, for messages.

    Returns:
        list[str]: one line per disagreeing metric.
    """
    metainfo = metainfo if isinstance(metainfo, Mapping) else {}
    classes = metainfo.get('classes')
    metrics = list(getattr(evaluator, 'metrics', None) or [])
    if classes is None or not metrics:
        return []
    trained = checkpoint_unseen_classes(checkpoint, classes)
    if trained is not None:
        reference = ('the checkpoint (its decode_head.unseen_mask / '
                     'meta.dataset_meta)', tuple(trained))
    elif metainfo.get('unseen_classes') is not None:
        reference = ('the test dataset (test_dataloader.dataset)',
                     tuple(metainfo['unseen_classes']))
    else:
        return []
    problems = []
    for i, metric in enumerate(metrics):
        seen = getattr(metric, 'seen_classes', None)
        unseen = getattr(metric, 'unseen_classes', None)
        if seen is None and unseen is None:
            continue
        place = where + (f'.metrics[{i}]' if len(metrics) > 1 else '')
        metric_unseen = resolve_split(classes, seen, unseen)[1]
        if set(metric_unseen) != set(reference[1]):
            problems.append(
                f'{place} ({type(metric).__name__}) scores with the unseen '
                f'classes {tuple(metric_unseen)}, {reference[0]} has '
                f'{reference[1]}')
    return problems
