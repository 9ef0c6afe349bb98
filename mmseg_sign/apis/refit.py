"""The refit of C in :func:`~mmseg_sign.apis.add_classes`: the transfer
stage's classifier step (paper eq. 8-9) on the grown class list, on
generated features of every class plus real seen features when the
training data is reachable."""
import copy
import sys
from typing import Optional

import torch
from mmengine.logging import print_log
from mmengine.runner import Runner
from mmengine.utils import ProgressBar
from torch import nn

from ..datasets.zero_shot import mask_unseen_labels
from ..datasets.zero_shot_wrapper import metainfo_from_cfg
from ..structures.stage_plan import StagePlan, stage_options
from .outputs import AddClassesError


def plan_stage(cfg, name: str) -> Optional[dict]:
    """The first stage ``name`` of the config's plan (options filled in),
    or ``None``.

    Args:
        cfg (Config): a config with a plan (``train_cfg.stages``).
        name (str): a stage name.

    Returns:
        dict | None: the stage.
    """
    return next(
        (dict(s)
         for s in StagePlan.from_config(cfg) or [] if s['name'] == name), None)


def refit_plan(cfg, iters: Optional[int]):
    """What the refit of C runs: the transfer stage of the config's plan.

    Args:
        cfg (Config): the model's config.
        iters (int, optional): the refit's length (default: the transfer
            stage's).

    Returns:
        tuple: ``(iters, stage options, optimizer config)``: the transfer
        stage in ``'classifier'`` mode with its loss weights, and the
        config's ``transfer`` optimizer.
    """
    transfer = plan_stage(cfg, 'transfer') or dict(name='transfer', iters=1000)
    opts = stage_options(0, dict(transfer, mode='classifier'))
    optimizer = (cfg.get('optim_wrapper', None) or {}).get('transfer', {}).get(
        'optimizer', dict(type='Adam', lr=1e-4, betas=(0.5, 0.999)))
    return iters or transfer['iters'], opts, optimizer


def real_batches(cfg, seed: int):
    """An endless iterator over the training data, or ``None`` (the reason
    in the log) when its files cannot be read (the refit then uses
    generated features only; ``real=False`` asks for that). A config whose
    ``train_dataloader`` lacks a key it needs is an error naming the key,
    not a silent fallback.

    Args:
        cfg (Config): the model's config.
        seed (int): the loader's seed.

    Returns:
        Iterator[dict] | None: data batches, forever.
    """
    if cfg.get('train_dataloader', None) is None:
        raise AddClassesError(
            'the config has no train_dataloader, which the refit reads its '
            'real batches from; give the config the model was trained with '
            '(or real=False / --no-real to refit on generated features '
            'only).')
    try:
        loader = Runner.build_dataloader(
            copy.deepcopy(cfg.train_dataloader), seed=seed)
        dataset = loader.dataset
        mask_unseen_labels(dataset, insert=True)
        if not len(dataset):
            raise FileNotFoundError('the training dataset is empty')
    except KeyError as err:
        raise AddClassesError(
            'building the config\'s train_dataloader failed on a missing '
            f'key: {err.args[0] if err.args else err}. Fix the config, or '
            'pass real=False (--no-real) to refit on generated features '
            'only.') from err
    except (OSError, ValueError, AttributeError) as err:
        print_log(
            f'add_classes: the training data is not reachable ({err}); '
            'C is refit on generated features only.',
            logger='current')
        return None

    def endless():
        while True:
            yield from loader

    return endless()


def refit_classifier(model,
                     iters: int,
                     opts: dict,
                     optimizer_cfg: dict,
                     batches,
                     refit: str = 'classifier',
                     num_new: int = 0,
                     pixels: int = 4096) -> None:
    """The transfer stage's classifier step (eq. 9) ``iters`` times: E, SIM
    and G frozen; C learns from real seen features (``batches``) and
    generated features of every class.

    Args:
        model (nn.Module): the grown segmentor (updated in place).
        iters (int): refit iterations.
        opts (dict): the transfer stage's options (:func:`refit_plan`);
            ``latent='posterior'`` feeds G the SIM's mean latent of the real
            batches' pixels (without real batches: N(0, I) noise).
        optimizer_cfg (dict): the optimizer of C.
        batches (Iterator | None): real batches (:func:`real_batches`).
        refit (str): what learns, one of :data:`REFIT_MODES`.
        num_new (int): how many classes were added (the last outputs).
        pixels (int): generated features per iteration.
    """
    from mmengine.optim import build_optim_wrapper
    head = model.decode_head
    modules = [head.conv_seg]
    if refit == 'trunk+classifier' and head.classifier == 'shared_trunk':
        modules.append(head.trunk)
    for p in model.parameters():
        p.requires_grad_(False)
    for m in modules:
        m.requires_grad_(True)
    optim = build_optim_wrapper(
        nn.ModuleList(modules),
        dict(type='OptimWrapper', optimizer=dict(optimizer_cfg)))
    conv = head.conv_seg
    old = conv.out_channels - num_new
    kept = [
        conv.weight[:old].detach().clone(), conv.bias[:old].detach().clone()
    ]
    model.eval()
    head.train()  # dropout before C and in G, as in the transfer stage
    like = head.class_embedding
    bar = ProgressBar(iters)
    for it in range(iters):
        if batches is not None:
            data = model.data_preprocessor(next(batches), True)
            with torch.no_grad():
                feats = model.extract_feat(data['inputs'])
            losses = head.loss_transfer(feats, data['data_samples'],
                                        opts['real_weight'],
                                        opts['synth_weight'],
                                        opts.get('latent', 'prior'))
        else:
            losses = dict(
                loss_ce_synth=head.loss_synthetic(pixels, like,
                                                  opts['synth_weight']))
        loss = sum(losses.values())
        if not torch.isfinite(loss):
            raise FloatingPointError(f'add_classes: non-finite loss at '
                                     f'iteration {it + 1}: {losses}')
        optim.update_params(loss)
        if refit == 'new':  # the old outputs stay as trained
            with torch.no_grad():
                conv.weight[:old] = kept[0]
                conv.bias[:old] = kept[1]
        bar.update()
    sys.stdout.write('\n')
    for p in model.parameters():
        p.requires_grad_(True)
    model.eval()


def check_refit_split(cfg, head, config_name: str, checkpoint) -> None:
    """The config's training split is the model's (its checkpoint's): with
    another, the refit would train C on real pixels of classes the model
    holds unseen, and score them as unseen.

    Args:
        cfg (Config): the config the refit reads its training data from.
        head (nn.Module): the model's head, its checkpoint loaded.
        config_name (str): the config's name, for the message.
        checkpoint (str | None): the checkpoint's path, for the message.

    Raises:
        AddClassesError: naming both splits and the fix.
    """
    if head.class_names is None or not bool(head.unseen_mask.any()):
        return
    model_unseen = tuple(
        c for c, u in zip(head.class_names, head.unseen_mask.tolist()) if u)
    loader = cfg.get('train_dataloader') or {}
    meta = metainfo_from_cfg(loader.get('dataset')) or {}
    config_unseen = meta.get('unseen_classes')
    if config_unseen is None or {c.strip()
                                 for c in config_unseen
                                 } == {c.strip()
                                       for c in model_unseen}:
        return
    raise AddClassesError(
        f"the training data of {config_name} hold the unseen classes "
        f'{tuple(config_unseen)}, but the model' +
        (f' ({checkpoint})' if checkpoint else '') +
        f' was trained with {model_unseen} unseen: the refit would '
        'train the classifier on real pixels of classes the model holds '
        'unseen. Use the config the checkpoint was trained with, or give '
        "its datasets the checkpoint's split: metainfo=dict(unseen_classes="
        f'{model_unseen!r}) in train_dataloader, val_dataloader and '
        'test_dataloader.')
