"""The SIGN stage plan: which stage runs at which iteration, each stage's
options, which optimizer wrappers it steps and which of G and D it runs.

A run's plan is ``train_cfg.stages``, parsed once by the training loop
(``StagePlanTrainLoop``, which switches the stages); the segmentor (each
stage's update), the resume checks and the tools read these facts from
here. The stages themselves: paper section 3
(train: eq. 4-7; transfer: eq. 8-9; self-training: section 3.4, eq. 16)
and docs/reproduction.md.
"""
import math
import numbers
from collections.abc import Mapping
from collections.abc import Sequence as SequenceABC
from typing import Dict, Iterator, List, Optional, Sequence

#: self-training pseudo-label modes (section 3.4): AST (eq. 16), ZS3Net's
#: ST (top p %) and CaGNet's ST (top k)
ST_MODES = ('AST', 'ST', 'ST_topk')
#: which ignored pixels AST labels: all of them (the paper), or those whose
#: teacher arg-max over all classes is an unseen class (ZS3's candidates)
AST_CANDIDATES = ('ignored', 'predicted_unseen')

#: stage name → its options and their defaults (besides ``name``, ``iters``)
STAGE_OPTIONS: Dict[str, dict] = dict(
    # E, SIM, C (ce + kld); G (adv + mmd); D (adv [+ ce of C])
    train=dict(),
    # 'alternate' (the authors' recipe): blocks of `block_iters` iterations,
    # first C on real (real_weight) + fake seen features (fake_weight) with
    # G and D still training, then C on synthetic features of sampled
    # labels (synth_weight). 'classifier': C alone on real + synthetic
    # features every iteration (eq. 9). latent: the z that G is fed for the
    # synthetic features of sampled labels, 'prior' (z ~ N(0, I): the
    # released code, docs/reproduction.md) or 'posterior' (the SIM's
    # latent of the batch's real pixels, position by position:
    # docs/camvid.md).
    transfer=dict(
        mode='alternate',
        block_iters=100,
        real_weight=0.75,
        fake_weight=0.25,
        synth_weight=0.125,
        latent='prior'),
    # section 3.4: pseudo labels of the frozen teacher, 'AST' (eq. 16),
    # 'ST' (ZS3: top_p % per class among pixels predicted unseen) or
    # 'ST_topk' (CaGNet: best unseen class when among the top_k classes;
    # CaGNet's self-training config: top 1). update='train' (the authors'
    # release): the train stage's own update on the pseudo-labelled
    # targets (E, SIM: ce + kld; G: adv + mmd; D + C: adv + ce).
    # update='classifier': E, SIM and C on the targets, G and D frozen.
    # synth_weight: C on synthetic features (eq. 8) too; the release uses
    # none. max_pseudo_ratio: the
    # pseudo-labelled pixels of a batch weigh at most this many times its
    # seen-labelled pixels (None: the paper's eq. 16 alone). candidates
    # (AST): 'ignored' (every ignored pixel, the paper) or
    # 'predicted_unseen' (those the teacher predicts unseen).
    self_train=dict(
        mode='AST',
        temperature=2.0,
        top_p=75.0,
        top_k=1,
        update='train',
        synth_weight=0.0,
        max_pseudo_ratio=None,
        candidates='ignored'),
)
TRANSFER_MODES = ('alternate', 'classifier')
#: the transfer stage's latent for synthetic features of sampled labels
TRANSFER_LATENTS = ('prior', 'posterior')
SELF_TRAIN_UPDATES = ('train', 'classifier')
#: the options only some modes of a stage read: stage → mode → its own
#: (an option of another mode given explicitly is an error: it would be
#: accepted and ignored)
MODE_OPTIONS: Dict[str, Dict[str, set]] = dict(
    transfer=dict(alternate={'block_iters', 'fake_weight'}, classifier=set()),
    self_train=dict(
        AST={'temperature', 'candidates'}, ST={'top_p'}, ST_topk={'top_k'}),
)


def _check_number(where: str,
                  key: str,
                  value,
                  low: float = 0.0,
                  low_inclusive: bool = True) -> None:
    """``value`` is a finite real number ``>= low`` (``> low`` when not
    ``low_inclusive``): else a ValueError naming the stage and key (also for
    strings and booleans, which would fail later as a raw TypeError or be
    read as 0 / 1)."""
    sign = '>=' if low_inclusive else '>'
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(
            f'{where}: {key} must be a number {sign} {low:g}, got '
            f'{value!r} (a {type(value).__name__}); write it without '
            f"quotes, e.g. {key}=2.0 (--cfg-options ...{key}=2.0).")
    if not math.isfinite(value) or not (value >= low
                                        if low_inclusive else value > low):
        raise ValueError(f'{where}: {key} must be a finite number {sign} '
                         f'{low:g}, got {value!r}.')


def _check_int(where: str, key: str, value) -> None:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) \
            or value < 1:
        raise ValueError(f'{where}: {key} must be a positive integer, got '
                         f'{value!r}.')


def check_mode_options(index: int, stage: dict) -> None:
    """A stage as written in a plan sets no option that its mode does not
    read (``temperature`` with ``mode='ST'``, ``block_iters`` with
    ``mode='classifier'``): it would be accepted and ignored.
    Only the plan is checked: code that switches a filled-in stage to
    another mode (``add_classes``' refit) passes the others' options on.

    Args:
        index (int): its place in the plan (for error messages).
        stage (dict): the stage as written.

    Raises:
        ValueError: naming the options and the modes that read them.
    """
    name = stage.get('name')
    modes = MODE_OPTIONS.get(name)
    mode = stage.get('mode', STAGE_OPTIONS.get(name, {}).get('mode'))
    if not modes or mode not in modes:
        return
    where = f'stages[{index}] ({name})'
    own = modes[mode]
    unused = sorted((set(stage) & set().union(*modes.values())) - own)
    if unused:
        users = {
            k: [m for m, opts in modes.items() if k in opts]
            for k in unused
        }
        raise ValueError(
            f"{where}: mode={mode!r} does not use "
            f'{", ".join(unused)} (it reads '
            f'{", ".join(sorted(own)) or "none of the mode options"}); '
            'the value would be accepted and ignored. Remove it (on the '
            'command line: ' + ' '.join(f'train_cfg.stages.{index}.{k}=None'
                                        for k in unused) +
            '), or choose the mode that uses it: ' +
            '; '.join(f"{k}: mode={' or '.join(map(repr, m))}"
                      for k, m in users.items()) + '.')


def check_plan_type(stages) -> None:
    """A plan is a list of stage dicts; anything else (a dict, a stage
    name, a list of names) is refused naming what was given and the form.

    Raises:
        ValueError: naming the value and the fix.
    """
    form = ("train_cfg.stages is a list with one dict per stage, e.g. "
            "[dict(name='train', iters=600), dict(name='transfer', "
            "iters=400), dict(name='self_train', iters=400)]")
    if isinstance(stages, Mapping):
        raise ValueError(
            f'{form}; got a dict with keys {sorted(stages)}. To change one '
            'stage from the command line, set its keys one at a time: '
            '--cfg-options train_cfg.stages.0.iters=8.')
    if isinstance(stages, (str, bytes)) or not isinstance(stages, SequenceABC):
        raise ValueError(f'{form}; got {stages!r}.')
    for i, stage in enumerate(stages):
        if not isinstance(stage, Mapping):
            hint = f" (dict(name={stage!r}, iters=N))" if isinstance(
                stage, str) else ''
            raise ValueError(f'{form}; stages[{i}] is {stage!r}, not a '
                             f'dict{hint}.')


def without_unset(stage: dict) -> dict:
    """A stage without the mode options set to ``None``: None unsets one
    (``--cfg-options train_cfg.stages.1.block_iters=None``, the command
    line's way to remove a key when switching the stage's mode).

    Args:
        stage (dict): a stage as written.

    Returns:
        dict: a copy without them.
    """
    modes = MODE_OPTIONS.get(stage.get('name'), {})
    options = set().union(*modes.values()) if modes else set()
    return {k: v for k, v in stage.items() if not (v is None and k in options)}


def without_other_modes(stage: dict) -> dict:
    """A filled-in stage (:func:`stage_options`) without the options that
    only other modes read: the stage as a plan may write it (e.g. the
    self-training run ``add_classes`` writes, from the config's stage).

    Args:
        stage (dict): a stage with ``name`` and its options.

    Returns:
        dict: a copy without the other modes' options.
    """
    modes = MODE_OPTIONS.get(stage.get('name'))
    if not modes or stage.get('mode') not in modes:
        return dict(stage)
    drop = set().union(*modes.values()) - modes[stage['mode']]
    return {k: v for k, v in stage.items() if k not in drop}


def stage_options(index: int, stage: dict) -> dict:
    """Check one stage of a plan and fill in its options.

    Args:
        index (int): its place in the plan (for error messages).
        stage (dict): ``name``, ``iters`` and options
            (:data:`STAGE_OPTIONS`).

    Returns:
        dict: the stage with every option filled in. A ValueError names
        the stage, the key and the fix.
    """
    name = stage.get('name')
    where = f'stages[{index}] ({name})'
    if name not in STAGE_OPTIONS:
        raise ValueError(f'stages[{index}]: name must be one of '
                         f'{tuple(STAGE_OPTIONS)}, got {name!r}.')
    _check_int(where, '`iters`', stage.get('iters'))
    defaults = STAGE_OPTIONS[name]
    unknown = set(stage) - {'name', 'iters'} - set(defaults)
    if unknown:
        raise ValueError(f'{where}: unknown keys {sorted(unknown)}; '
                         f'options: {sorted(defaults) or "none"}.')
    out = dict(defaults, **stage)
    if name == 'transfer':
        if out['mode'] not in TRANSFER_MODES:
            raise ValueError(f'{where}: mode must be one of '
                             f'{TRANSFER_MODES}, got {out["mode"]!r}.')
        if out['latent'] not in TRANSFER_LATENTS:
            raise ValueError(f'{where}: latent must be one of '
                             f'{TRANSFER_LATENTS}, got {out["latent"]!r}.')
        _check_int(where, 'block_iters', out['block_iters'])
        for key in ('real_weight', 'fake_weight', 'synth_weight'):
            _check_number(where, key, out[key])
        weights = ('real_weight', 'synth_weight') if out['mode'] == \
            'classifier' else ('real_weight', 'fake_weight', 'synth_weight')
        if not any(out[key] for key in weights):
            raise ValueError(
                f'{where}: {", ".join(weights)} are all 0, so the classifier '
                'learns from nothing in this stage (synth_weight > 0 is how '
                'it learns the unseen classes): give one of them a weight, '
                f'e.g. --cfg-options train_cfg.stages.{index}.synth_weight='
                f'{STAGE_OPTIONS["transfer"]["synth_weight"]}.')
    elif name == 'self_train':
        if out['mode'] not in ST_MODES:
            raise ValueError(f'{where}: mode must be one of {ST_MODES}, '
                             f'got {out["mode"]!r}.')
        _check_number(
            where, 'temperature', out['temperature'], low_inclusive=False)
        _check_number(where, 'top_p', out['top_p'], low_inclusive=False)
        if not out['top_p'] <= 100:
            raise ValueError(f'{where}: top_p is a percentage in (0, 100], '
                             f'got {out["top_p"]}.')
        if out['update'] not in SELF_TRAIN_UPDATES:
            raise ValueError(f'{where}: update must be one of '
                             f'{SELF_TRAIN_UPDATES}, got {out["update"]!r}.')
        _check_number(where, 'synth_weight', out['synth_weight'])
        if out['candidates'] not in AST_CANDIDATES:
            raise ValueError(f'{where}: candidates must be one of '
                             f'{AST_CANDIDATES}, got {out["candidates"]!r}.')
        if out['max_pseudo_ratio'] is not None:
            _check_number(
                where,
                'max_pseudo_ratio',
                out['max_pseudo_ratio'],
                low_inclusive=False)
        _check_int(where, 'top_k', out['top_k'])
    return out


#: each stage's optimizer wrappers by the role they play in its update
#: (``ZeroShotEncoderDecoder``): ``segmentor`` steps E and SIM (and C when
#: the head's C is not on D's trunk), ``generator`` G, ``discriminator`` D
#: (and C on the shared trunk), ``classifier`` C (+ D) in the transfer stage
STAGE_WRAPPERS: Dict[str, Dict[str, str]] = dict(
    train=dict(
        segmentor='segmentor',
        generator='generator',
        discriminator='discriminator'),
    transfer=dict(classifier='transfer', generator='transfer_generator'),
    self_train=dict(
        segmentor='self_train',
        generator='self_train_generator',
        discriminator='self_train_discriminator'),
)


def stage_optim_wrappers(stage: dict) -> Dict[str, str]:
    """The optimizer wrappers ``stage`` (filled in by :func:`stage_options`)
    steps, ``{role: wrapper name}`` in the order it steps them.

    Args:
        stage (dict): ``name`` and the stage's options.

    Returns:
        dict[str, str]: e.g. ``{'classifier': 'transfer'}`` for a transfer
        stage in ``'classifier'`` mode (G is not trained there).
    """
    roles = dict(STAGE_WRAPPERS[stage['name']])
    if stage['name'] == 'transfer' and stage['mode'] != 'alternate':
        del roles['generator']
    if stage['name'] == 'self_train' and stage['update'] != 'train':
        roles = dict(segmentor=roles['segmentor'])
    return roles


def required_optim_wrappers(stage: dict) -> List[str]:
    """The optimizer wrappers a stage steps.

    Args:
        stage (dict): a stage filled in by :func:`stage_options`.

    Returns:
        list[str]: their names in ``optim_wrapper``, in the order the
        stage steps them.
    """
    return list(stage_optim_wrappers(stage).values())


def gan_parts_used(stage: dict) -> set:
    """Which of G and D a stage runs: the parts that must hold trained
    weights when the plan starts with it.

    Args:
        stage (dict): a stage filled in by :func:`stage_options`.

    Returns:
        set[str]: a subset of ``{'generator', 'discriminator'}``.
    """
    name = stage['name']
    if name == 'transfer':
        return {'generator'} | ({'discriminator'}
                                if stage['mode'] == 'alternate' else set())
    if name == 'self_train':
        if stage['update'] == 'train':
            return {'generator', 'discriminator'}
        return {'generator'} if stage['synth_weight'] else set()
    return {'generator', 'discriminator'}  # train


class StagePlan:
    """The stages of one run, in order, with their options filled in.

    The stage of an iteration is derived, never stored: a run resumed at
    any iteration lands in the right stage.

    Args:
        stages (Sequence[dict]): e.g. ``[dict(name='train', iters=40000),
            dict(name='transfer', iters=6000)]``; the options of each stage
            (:data:`STAGE_OPTIONS`) are checked and their defaults filled
            in.
    """

    def __init__(self, stages: Sequence[dict]):
        check_plan_type(stages)
        if not stages:
            raise ValueError('train_cfg.stages: a SIGN stage plan needs at '
                             'least one stage.')
        stages = [without_unset(s) for s in stages]
        self.stages: List[dict] = [
            stage_options(i, s) for i, s in enumerate(stages)
        ]
        for i, stage in enumerate(stages):
            check_mode_options(i, stage)
        order = list(STAGE_OPTIONS)  # train, transfer, self_train
        for i, (a, b) in enumerate(zip(self.stages, self.stages[1:])):
            if order.index(b['name']) < order.index(a['name']):
                raise ValueError(
                    f'stages[{i + 1}] ({b["name"]}) comes after stages[{i}] '
                    f'({a["name"]}): a plan runs {" → ".join(order)} '
                    '(each may be left out); reorder the stages.')
        for i, (a, b) in enumerate(zip(self.stages, self.stages[1:])):
            if a['name'] == b['name']:
                raise ValueError(
                    f'stages[{i}] and stages[{i + 1}] are both '
                    f'{a["name"]!r}: a plan has each stage once (a stage '
                    "steps its own optimizer wrappers, whose schedulers span "
                    'that one stage; self-training has one teacher, taken '
                    'when it starts). Merge them into one stage of '
                    f'iters={a["iters"]} + {b["iters"]}, or run the second '
                    'as a new run with load_from=the first run\'s '
                    'checkpoint.')
            if a['name'] == 'train' and b['name'] == 'self_train':
                raise ValueError(
                    f'stages[{i + 1}] (self_train) follows the train stage '
                    'without a transfer stage: its teacher\'s classifier '
                    'has never learnt the unseen classes (C learns them '
                    'from generated features in transfer), so its pseudo '
                    'labels would be noise. Put a transfer stage between '
                    "them (e.g. dict(name='transfer', iters=400)); a plan "
                    'that starts with self_train (load_from a transferred '
                    'checkpoint) is fine.')
        for i, stage in enumerate(self.stages):
            if stage['name'] == 'transfer' and stage['mode'] == 'alternate' \
                    and stage['iters'] <= stage['block_iters']:
                raise ValueError(
                    f'stages[{i}] (transfer): {stage["iters"]} iterations in '
                    f'alternating blocks of block_iters='
                    f'{stage["block_iters"]} never reach the second block, '
                    'where C learns from the unseen classes\' synthetic '
                    'features. Set block_iters below iters (e.g. '
                    f'block_iters={max(1, stage["iters"] // 2)}), or '
                    "mode='classifier'.")

    def __len__(self) -> int:
        return len(self.stages)

    def __iter__(self) -> Iterator[dict]:
        return iter(self.stages)

    def __getitem__(self, index: int) -> dict:
        return self.stages[index]

    @property
    def total_iters(self) -> int:
        """The run's length: the sum of the stages' iterations."""
        return sum(s['iters'] for s in self.stages)

    def index_at(self, iteration: int) -> int:
        """The stage that runs an iteration.

        Args:
            iteration (int): 0-based (``runner.iter``).

        Returns:
            int: the stage's index; iterations past the plan stay in the
            last stage.
        """
        end = 0
        for i, stage in enumerate(self.stages):
            end += stage['iters']
            if iteration < end:
                return i
        return len(self.stages) - 1

    def start(self, index: int) -> int:
        """Where a stage starts.

        Args:
            index (int): the stage's index in the plan.

        Returns:
            int: its first iteration (0-based).
        """
        return sum(s['iters'] for s in self.stages[:index])

    def describe(self) -> str:
        """The plan in one line, e.g. ``'train 600 + transfer 200'``."""
        return ' + '.join(f"{s['name']} {s['iters']}" for s in self.stages)

    @staticmethod
    def from_config(cfg) -> Optional['StagePlan']:
        """The plan of a config: ``train_cfg.stages`` of a
        ``StagePlanTrainLoop``.

        Args:
            cfg (Config | dict): a config.

        Returns:
            StagePlan | None: the plan; ``None`` for a config without one
            (e.g. SPNet's ``IterBasedTrainLoop``).

        Raises:
            ValueError: a bad stage.
        """
        train_cfg = cfg.get('train_cfg') or {}
        if train_cfg.get('type') != 'StagePlanTrainLoop':
            return None
        if not train_cfg.get('stages'):
            raise ValueError(
                "train_cfg.type='StagePlanTrainLoop' runs a SIGN stage plan, "
                "but train_cfg has no stages: train_cfg = dict(type="
                "'StagePlanTrainLoop', stages=[dict(name='train', iters=N), "
                '...]) (configs/_base_/schedules).')
        return StagePlan(train_cfg['stages'])
