"""ResumeCheckHook: ``--resume`` and ``load_from`` that would lose or
misuse training state are refused or repaired before iteration 1."""
import ast
import logging
import re
from typing import Optional

from mmengine.hooks import Hook
from mmengine.logging import print_log
from mmseg.registry import HOOKS

from ...structures.stage_plan import gan_parts_used
from ...utils.state_dict import strip_module_prefix
from ..checkpoint_checks import checkpoint_mismatches
from ..runner.runner_state import (is_resuming, is_training, stage_plan,
                                   unwrap_model)
from .strict_checkpoint_hook import StrictCheckpointHook

STAGE_NAMES = ('train', 'transfer', 'self_train')
PLAN_KEY = 'sign_stage_plan'


def _plan_in_config_text(text: str) -> Optional[list]:
    """``[[name, iters], ...]`` of the ``train_cfg.stages`` in a dumped
    config's text (``meta['cfg']``), read with ``ast`` (the text is never
    run); None when it holds no stage plan."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    for node in tree.body:
        if not (isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == 'train_cfg'
                for t in node.targets) and isinstance(node.value, ast.Call)):
            continue
        for keyword in node.value.keywords:
            if keyword.arg != 'stages' or not isinstance(
                    keyword.value, (ast.List, ast.Tuple)):
                continue
            plan = []
            for stage in keyword.value.elts:
                fields = {
                    k.arg: k.value
                    for k in getattr(stage, 'keywords', [])
                    if isinstance(k.value, ast.Constant)
                }
                plan.append([
                    getattr(fields.get('name'), 'value', None),
                    getattr(fields.get('iters'), 'value', None)
                ])
            return plan
    return None


def saved_stage_plan(checkpoint: dict,
                     source: str = 'the checkpoint') -> Optional[list]:
    """The stage plan that wrote ``checkpoint``, as ``[(name, iters),
    ...]``: ``meta['sign_stage_plan']``, or (a checkpoint written before
    the plan travelled there) the plan in its dumped config,
    ``meta['cfg']``. None when neither holds one (not a SIGN run).

    Raises:
        ValueError: a plan that is not a list of ``[stage name, positive
            iterations]``, naming ``source`` and the key.
    """
    meta = checkpoint.get('meta') if isinstance(checkpoint, dict) else None
    meta = meta if isinstance(meta, dict) else {}
    key, saved = f"meta['{PLAN_KEY}']", meta.get(PLAN_KEY)
    if saved is None and isinstance(meta.get('cfg'), str):
        key, saved = "meta['cfg'] (train_cfg.stages)", _plan_in_config_text(
            meta['cfg'])
    if saved is None:
        return None
    fine = isinstance(saved, (list, tuple)) and saved and all(
        isinstance(s, (list, tuple)) and len(s) == 2 and s[0] in STAGE_NAMES
        and isinstance(s[1], int) and not isinstance(s[1], bool) and s[1] > 0
        for s in saved)
    if not fine:
        raise ValueError(
            f'{source}: its {key} is damaged ({saved!r:.200}): a stage plan '
            f'is a list of [stage name ({", ".join(STAGE_NAMES)}), '
            'iterations > 0]. Resume from another checkpoint of the run '
            '(its work dir\'s iter_N.pth), or start a new run from these '
            'weights with load_from=PATH and no --resume.')
    return [(str(n), int(i)) for n, i in saved]


def check_plan_reaches(plan, checkpoint: dict) -> None:
    """``--resume`` from a checkpoint at or past the plan's end would
    train nothing and exit 0: refused.

    Args:
        plan (StagePlan): the run's plan.
        checkpoint (dict): the loaded checkpoint (``meta['iter']``).
    """
    meta = checkpoint.get('meta')
    done = meta.get('iter') if isinstance(meta, dict) else None
    if not isinstance(done, int) or done < plan.total_iters:
        return
    raise ValueError(
        f'ResumeCheckHook: --resume from a checkpoint at iteration {done}, '
        f'but the stage plan ends at iteration {plan.total_iters} '
        f'({plan.describe()}): there is nothing left to train. Lengthen '
        f'the plan (e.g. --cfg-options train_cfg.stages.'
        f'{len(plan) - 1}.iters=N, or append a stage), or test the '
        'checkpoint with tools/test.py.')


def check_plan_keeps_the_stage(plan,
                               checkpoint: dict,
                               source: str = 'the checkpoint') -> None:
    """``--resume`` with a plan that puts the checkpoint's iterations in
    another stage (e.g. a checkpoint 2 iterations into transfer, resumed
    with a longer train stage) would continue a transferred model in the
    train stage, with its schedulers re-spanned: refused. The stages up to
    the checkpoint's must be the same, at the same iterations; the
    checkpoint's own stage may be lengthened and later stages changed
    freely. The plan that wrote it: :func:`saved_stage_plan`.

    Args:
        plan (StagePlan): the run's plan.
        checkpoint (dict): the loaded checkpoint (``meta['iter']``).
        source (str): the checkpoint, for the messages.
    """
    meta = checkpoint.get('meta')
    meta = meta if isinstance(meta, dict) else {}
    done = meta.get('iter')
    if not isinstance(done, int) or done < 1:
        return  # at iteration 0: no stage to keep
    old = saved_stage_plan(checkpoint, source)
    if not old:
        return  # not written by a stage plan
    new = [(s['name'], s['iters']) for s in plan]
    end, k = 0, len(old) - 1
    for j, (_, iters) in enumerate(old):
        end += iters
        if done - 1 < end:
            k = j
            break
    # stages before the checkpoint's: identical; its own: same name and
    # start (so the same index)
    if new[:k] == old[:k] and len(new) > k and \
            new[k][0] == old[k][0] and plan.index_at(done - 1) == k:
        return

    def show(stages):
        return ' → '.join(f'{n} {i}' for n, i in stages)

    raise ValueError(
        f'--resume from a checkpoint at iteration {done}, in stage '
        f"{k} ({old[k][0]!r}) of the plan that wrote it ({show(old)}); "
        f'this plan ({show(new)}) puts that iteration in '
        f"{new[plan.index_at(done - 1)][0]!r} or moves the stages "
        'before it: the run would continue in another stage than the '
        'one it was in, with its schedules re-spanned. Keep the stages '
        'up to the checkpoint as they were (lengthen only its own '
        'stage, or change later ones), or start the new plan from '
        'these weights as a new run: load_from=CHECKPOINT in another '
        'work dir, without --resume.')


def checkpoint_precision(checkpoint: dict) -> Optional[str]:
    """The mixed precision a checkpoint was trained in: ``'float16'``
    (loss scales saved), the one autocast dtype of its dumped config, or
    None (float32)."""
    saved = checkpoint.get('optimizer')
    saved = saved if isinstance(saved, dict) else {}
    if any(
            isinstance(s, dict) and s.get('loss_scaler')
            for s in saved.values()):
        return 'float16'
    meta = checkpoint.get('meta')
    text = meta.get('cfg', '') if isinstance(meta, dict) else ''
    text = text if isinstance(text, str) else ''
    dtypes = set(re.findall(r"dtype\s*=\s*'(float16|bfloat16)'", text))
    if len(dtypes) == 1 and re.search(
            r'MixedPrecisionOptimWrapper|AmpOptimWrapper', text):
        return dtypes.pop()
    return None


@HOOKS.register_module()
class ResumeCheckHook(Hook):
    """After a checkpoint is loaded into a training run:

    * ``--resume`` past the end of the stage plan: an error (nothing to
      train);
    * ``--resume`` with optimizer wrappers added or regrouped since the
      checkpoint: they start fresh (logged), or an error when a regrouped
      one has already stepped;
    * ``load_from`` a checkpoint without G or D with a plan whose first
      stages use them: an error (unless ``allow_untrained_gan=True``).

    The plan is the training loop's (``runner.train_loop.plan``).

    A test or validation run with ``load_from`` (mmseg's own
    ``tools/test.py``, ``mim test``) that has no ``StrictCheckpointHook``
    gets one: mmengine loads leniently, so a checkpoint of another model
    would be scored with random weights. This project's ``tools/test.py``
    registers its own (with ``--lenient-load`` / ``--allow-split-change``).
    """
    priority = 'VERY_HIGH'

    def before_run(self, runner) -> None:
        if is_training(runner) or not runner.cfg.get('load_from') or any(
                isinstance(h, StrictCheckpointHook) for h in runner.hooks):
            return
        runner.register_hook(
            StrictCheckpointHook(
                runner.cfg.load_from,
                runner.cfg.filename or 'the config',
                flags_of="this project's tools/test.py (mmseg's has no "
                'such flag)'),
            priority='LOWEST')

    def after_load_checkpoint(self, runner, checkpoint: dict) -> None:
        if not is_training(runner):
            return  # tools/test.py, init_model: not a training run
        plan = stage_plan(runner)  # None: a loop without stages (SPNet)
        if not is_resuming(runner):
            if plan is not None:
                self._check_gan_weights(runner, plan, checkpoint)
            self._say_partial_load(runner, checkpoint)
            return
        self._check_same_model(runner, checkpoint)
        if plan is not None:
            check_plan_reaches(plan, checkpoint)
            check_plan_keeps_the_stage(
                plan, checkpoint,
                runner.cfg.get('load_from')
                or "the work dir's last checkpoint")
        self._start_new_wrappers_fresh(runner, checkpoint)
        self._say_precision_change(runner, checkpoint)

    @staticmethod
    def _check_same_model(runner, checkpoint: dict) -> None:
        """``--resume`` continues a run with its own model and optimizer
        states: a checkpoint of another model (e.g. a SIGN run's in an
        SPNet config) would fail later on an optimizer's state (a raw
        ``KeyError``) or load a part of the weights."""
        source = runner.cfg.get('load_from') or \
            "the work dir's last checkpoint"
        meta = checkpoint.get('meta')
        if isinstance(meta, dict) and meta.get('sign_inference_only'):
            # tools/publish_model.py's: the same model, for inference
            raise ValueError(
                f'--resume from {source}: a published checkpoint '
                '(tools/publish_model.py) holds the inference weights only '
                '(no G, no D, no optimizer or scheduler states), so no run '
                'can continue from it. To train from it, give it as '
                'load_from=PATH without --resume (G and D start from their '
                'initialisation); to continue the run that made it, resume '
                'that run\'s own checkpoint (its work dir\'s iter_N.pth).')
        problems = checkpoint_mismatches(
            unwrap_model(runner), checkpoint, inference=False)
        if problems:
            config = runner.cfg.filename or 'this config'
            raise ValueError(
                f'--resume from {source}: it was written by another model '
                f"than {config}'s:\n  - " + '\n  - '.join(problems) +
                '\n--resume continues a run with its own model and '
                'optimizer states. To start a new run from these weights '
                'instead, give them as load_from=PATH in another work dir '
                '(what matches is loaded; the rest keeps its '
                'initialisation).')

    @staticmethod
    def _say_partial_load(runner, checkpoint: dict) -> None:
        """``load_from`` a checkpoint that matches the model in part
        (e.g. a SIGN checkpoint in an SPNet config: the backbone only):
        allowed (fine-tuning from another model), said in one warning
        with the counts, not only in mmengine's key lists."""
        problems = checkpoint_mismatches(
            unwrap_model(runner), checkpoint, inference=False)
        if problems:
            print_log(
                f'load_from {runner.cfg.get("load_from")}: the checkpoint '
                'matches this model in part; the weights that match are '
                'loaded, the others keep their initialisation:\n  - ' +
                '\n  - '.join(problems),
                logger='current',
                level=logging.WARNING)

    @staticmethod
    def _say_precision_change(runner, checkpoint: dict) -> None:
        """``--resume`` of a mixed-precision run without ``--amp`` (or the
        other way round) trains on in the new precision; float16 loss
        scales are dropped. Allowed (it is a choice), but the log says
        what happens and how to keep the run's precision."""
        saved = checkpoint.get('optimizer')
        saved = saved if isinstance(saved, dict) else {}
        scaled = sorted(n for n, s in saved.items()
                        if isinstance(s, dict) and s.get('loss_scaler'))
        was = checkpoint_precision(checkpoint)
        wrappers = getattr(runner.optim_wrapper, 'optim_wrappers', None) \
            or {'optim_wrapper': runner.optim_wrapper}
        now = {
            str(getattr(w, 'cast_dtype', None) or '').replace('torch.', '')
            for w in wrappers.values()
        } - {'', 'None'}
        if was and not now:
            dropped = (f'; the float16 loss scales of {scaled} are dropped'
                       if scaled else '')
            print_log(
                f'Resuming: the checkpoint was trained with {was} mixed '
                f'precision and this run has none (no --amp): it continues '
                f'in float32{dropped}. To continue as it was trained, '
                f'resume with --amp --amp-dtype {was}.',
                logger='current',
                level=logging.WARNING)
        elif now and not was and saved:
            print_log(
                f'Resuming: the checkpoint was trained in float32 and this '
                f'run uses {"/".join(sorted(now))} mixed precision (--amp): '
                'it continues in mixed precision' +
                (' with a fresh loss scale' if 'float16' in now else '') + '.',
                logger='current',
                level=logging.WARNING)

    def before_save_checkpoint(self, runner, checkpoint: dict) -> None:
        """The plan that wrote the checkpoint, as ``[[name, iters], ...]``
        in its meta (``sign_stage_plan``), for ``--resume``'s check."""
        plan = stage_plan(runner) if is_training(runner) else None
        meta = checkpoint.get('meta')
        if plan is not None and isinstance(meta, dict):
            meta[PLAN_KEY] = [[s['name'], s['iters']] for s in plan]

    @staticmethod
    def _check_gan_weights(runner, plan, checkpoint: dict) -> None:
        """``load_from`` a checkpoint without G or D (a published
        checkpoint, or another model's) with a plan whose stages before any
        ``train`` stage use them: they would start random and C would learn
        from a random G. Refused unless ``allow_untrained_gan=True``."""
        if runner.cfg.get('allow_untrained_gan', False) or \
                not isinstance(checkpoint, dict):
            return
        state = checkpoint.get('state_dict', checkpoint)
        if not isinstance(state, dict):
            return
        have = set(strip_module_prefix(state))
        parts = {}
        for key in unwrap_model(runner).state_dict():
            for part in ('generator', 'discriminator'):
                if key.startswith(f'decode_head.{part}.') and \
                        'num_batches_tracked' not in key:
                    parts.setdefault(part, []).append(key not in have)
        missing = {part for part, lacks in parts.items() if any(lacks)}
        if not missing:
            return
        users = []
        for i, stage in enumerate(plan):
            if stage['name'] == 'train':
                break  # trains G and D from scratch first
            used = gan_parts_used(stage) & missing
            if used:
                users.append(f"stages[{i}] ({stage['name']}) uses " +
                             ' and '.join(sorted(used)))
        if not users:
            return
        which = ' and '.join(f'decode_head.{p}' for p in sorted(missing))
        published = isinstance(checkpoint.get('meta'), dict) and \
            checkpoint['meta'].get('sign_inference_only')
        raise ValueError(
            f'ResumeCheckHook: load_from={runner.cfg.get("load_from")!r} has '
            f'no weights for {which}' +
            (' (a published checkpoint: tools/publish_model.py leaves G '
             "and D's GAN head out)" if published else '') +
            f', but {"; ".join(users)}: they would start from random '
            'weights and the classifier would learn unseen classes from a '
            "random generator. Start from the 'train' stage's training "
            'checkpoint (iter_N.pth in its work dir, which holds G and D), '
            "put dict(name='train', iters=...) first in the plan, or set "
            'allow_untrained_gan=True in the config (--cfg-options '
            'allow_untrained_gan=True) if this is deliberate.')

    @staticmethod
    def _start_new_wrappers_fresh(runner, checkpoint: dict) -> None:
        """``--resume`` after optimizer wrappers were added to the config
        (e.g. a stage appended to the plan): mmengine would fail with a
        KeyError on their missing scheduler states; they start fresh
        instead, and the log says so."""
        saved = checkpoint.get('param_schedulers')
        current = runner.param_schedulers
        if isinstance(saved, dict) and isinstance(current, dict):
            for name in current:
                if name not in saved:
                    saved[name] = []
        wrappers = runner.optim_wrapper
        names = list(
            getattr(wrappers, 'optim_wrappers', None) or
            [k for k in (wrappers or {}) if k not in ('constructor', 'type')])
        new = [n for n in names if n not in checkpoint.get('optimizer', {})]
        if new:
            print_log(
                f'Resuming: the checkpoint has no state for the '
                f'optimizer wrappers {new} (added to the config since); '
                'they and their schedulers start fresh.',
                logger='current',
                level=logging.WARNING)
        ResumeCheckHook._restart_regrouped_wrappers(runner, checkpoint, names)

    @staticmethod
    def _restart_regrouped_wrappers(runner, checkpoint: dict, names) -> None:
        """``--resume`` after a wrapper's ``modules`` changed (e.g. a
        ``self_train`` wrapper that now also updates C):
        torch refuses the saved state (its parameter groups differ). A
        wrapper that never stepped starts fresh, with its schedulers; one
        that did is an error naming it."""
        saved = checkpoint.get('optimizer', {})
        built = getattr(runner.optim_wrapper, 'optim_wrappers', None)
        if not isinstance(saved, dict) or not built:
            return  # not (yet) an OptimWrapperDict: nothing to compare
        for name in names:
            if name not in saved or name not in built or \
                    not isinstance(saved[name], dict):
                continue
            optimizer = built[name].optimizer
            now = [len(g['params']) for g in optimizer.param_groups]
            before = [
                len(g['params']) for g in saved[name].get('param_groups', [])
            ]
            if now == before:
                continue
            if saved[name].get('state'):
                raise ValueError(
                    f'Resuming: optim_wrapper.{name} updates other '
                    f'parameters than in the checkpoint ({sum(before)} '
                    f'parameters in {len(before)} groups there, '
                    f'{sum(now)} in {len(now)} groups now), and it has '
                    'already stepped, so its state cannot be carried over. '
                    f'Resume with the `modules` the run was started with, '
                    'or start a new run from the checkpoint with '
                    'load_from=... (its optimizers then start fresh).')
            del saved[name]
            schedulers = checkpoint.get('param_schedulers')
            if isinstance(schedulers, dict):
                schedulers[name] = []
            print_log(
                f'Resuming: optim_wrapper.{name} now updates other '
                'parameters than in the checkpoint and has not '
                'stepped yet; it and its schedulers start fresh.',
                logger='current',
                level=logging.WARNING)
