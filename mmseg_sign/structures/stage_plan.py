"""The SIGN stages, their options and the optimizer wrappers each needs:
one home for what ``SIGNStageHook`` checks and ``ZeroShotEncoderDecoder``
runs."""
import math
import numbers
from typing import Dict, List

from ..utils.pseudo_labels import AST_CANDIDATES, ST_MODES

#: stage name → its options and their defaults (besides ``name``, ``iters``)
STAGE_OPTIONS: Dict[str, dict] = dict(
    # E, SIM, C (ce + kld); G (adv + mmd); D (adv [+ ce of C])
    train=dict(),
    # 'alternate' (the authors' recipe): blocks of `block_iters` iterations,
    # first C on real (real_weight) + fake seen features (fake_weight) with
    # G and D still training, then C on synthetic features of sampled
    # labels (synth_weight). 'classifier': C alone on real + synthetic
    # features every iteration (eq. 9).
    transfer=dict(mode='alternate', block_iters=100, real_weight=0.75,
                  fake_weight=0.25, synth_weight=0.125),
    # section 3.4: pseudo labels of the frozen teacher, 'AST' (eq. 16),
    # 'ST' (ZS3: top_p % per class among pixels predicted unseen) or
    # 'ST_topk' (CaGNet: best unseen class when among the top_k classes;
    # CaGNet's self-training config: top 1). update='train' (the authors'
    # release): the train stage's own update on the pseudo-labelled
    # targets (E, SIM: ce + kld; G: adv + mmd; D + C: adv + ce).
    # update='classifier' (this project before issue 16): E, SIM and C on
    # the targets, G and D frozen. synth_weight: C on synthetic features
    # (eq. 8) too; the release uses none. max_pseudo_ratio: the
    # pseudo-labelled pixels of a batch weigh at most this many times its
    # seen-labelled pixels (None: the paper's eq. 16 alone). candidates
    # (AST): 'ignored' (every ignored pixel, the paper) or
    # 'predicted_unseen' (those the teacher predicts unseen).
    self_train=dict(mode='AST', temperature=2.0, top_p=75.0, top_k=1,
                    update='train', synth_weight=0.0,
                    max_pseudo_ratio=None, candidates='ignored'),
)
TRANSFER_MODES = ('alternate', 'classifier')
SELF_TRAIN_UPDATES = ('train', 'classifier')


def _check_number(where: str, key: str, value, low: float = 0.0,
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
    if not math.isfinite(value) or not (value >= low if low_inclusive
                                        else value > low):
        raise ValueError(f'{where}: {key} must be a finite number {sign} '
                         f'{low:g}, got {value!r}.')


def _check_int(where: str, key: str, value) -> None:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) \
            or value < 1:
        raise ValueError(f'{where}: {key} must be a positive integer, got '
                         f'{value!r}.')


def stage_options(index: int, stage: dict) -> dict:
    """Check ``stage`` (``name``, ``iters`` and options) and return it with
    every option filled in. Errors name the stage and the fix."""
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
        _check_int(where, 'block_iters', out['block_iters'])
        for key in ('real_weight', 'fake_weight', 'synth_weight'):
            _check_number(where, key, out[key])
    elif name == 'self_train':
        if out['mode'] not in ST_MODES:
            raise ValueError(f'{where}: mode must be one of {ST_MODES}, '
                             f'got {out["mode"]!r}.')
        _check_number(where, 'temperature', out['temperature'],
                      low_inclusive=False)
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
            _check_number(where, 'max_pseudo_ratio', out['max_pseudo_ratio'],
                          low_inclusive=False)
        _check_int(where, 'top_k', out['top_k'])
    return out


def required_optim_wrappers(stage: dict) -> List[str]:
    """Names of the optimizer wrappers that ``stage`` (filled in by
    :func:`stage_options`) steps."""
    name = stage['name']
    if name == 'train':
        return ['segmentor', 'generator', 'discriminator']
    if name == 'transfer':
        return ['transfer'] + (['transfer_generator']
                               if stage['mode'] == 'alternate' else [])
    if stage['update'] == 'train':
        return ['self_train', 'self_train_generator',
                'self_train_discriminator']
    return ['self_train']
