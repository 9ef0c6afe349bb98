"""ModuleGroupOptimWrapperConstructor's ``modules`` paths: a part the model
declares absent (``None``) adds nothing, a path that names nothing is an
error (engine/optimizers/multi_optim_constructor.py). Its other cases run
on a SIGN model in tests/test_models/test_zero_shot_encoder_decoder.py."""
import pytest
import torch.nn as nn
from mmseg.registry import OPTIM_WRAPPER_CONSTRUCTORS

import mmseg_sign  # noqa: F401  (registers the constructor)


class _Head(nn.Module):

    def __init__(self, adversarial: bool):
        super().__init__()
        self.trunk = nn.Conv2d(4, 4, 1)
        self.conv_seg = nn.Conv2d(4, 3, 1)
        self.generator = nn.Linear(2, 4)
        self.discriminator = nn.Linear(4, 1) if adversarial else None
        self.label_head = None  # a plain attribute, never a module


class _Model(nn.Module):

    def __init__(self, adversarial: bool):
        super().__init__()
        self.decode_head = _Head(adversarial)


def _build(model, modules):
    build = OPTIM_WRAPPER_CONSTRUCTORS.get(
        'ModuleGroupOptimWrapperConstructor')
    return build(
        dict(
            generator=dict(
                optimizer=dict(type='SGD', lr=1.0),
                modules=['decode_head.generator']),
            discriminator=dict(
                optimizer=dict(type='SGD', lr=1.0), modules=modules)))(
                    model)


def _params(wrapper):
    return [p for g in wrapper.optimizer.param_groups for p in g['params']]


def test_a_part_declared_absent_adds_nothing():
    modules = [
        'decode_head.discriminator', 'decode_head.trunk',
        'decode_head.conv_seg'
    ]
    model = _Model(adversarial=False)
    got = _params(_build(model, modules)['discriminator'])
    head = model.decode_head
    want = [*head.trunk.parameters(), *head.conv_seg.parameters()]
    assert [id(p) for p in got] == [id(p) for p in want]
    # with D built, the same list holds D first, then C
    model = _Model(adversarial=True)
    got = _params(_build(model, modules)['discriminator'])
    head = model.decode_head
    want = [
        *head.discriminator.parameters(), *head.trunk.parameters(),
        *head.conv_seg.parameters()
    ]
    assert [id(p) for p in got] == [id(p) for p in want]
    # a plain attribute set to None is absent as well
    got = _params(
        _build(
            _Model(False),
            ['decode_head.label_head', 'decode_head.trunk'])['discriminator'])
    assert len(got) == 2  # trunk's weight and bias


@pytest.mark.parametrize(
    'path',
    [
        'decode_head.discriminatr',  # misspelt
        'decode_head.conv_seg.weight',  # a parameter, not a module
        'decod_head.trunk',  # a parent that does not exist
        'decode_head.discriminator.fc',  # below a part that is absent
    ])
def test_a_path_that_names_no_module_is_an_error(path):
    with pytest.raises(ValueError, match=f"no sub-module '{path}'"):
        _build(_Model(adversarial=False), [path, 'decode_head.trunk'])


def test_only_absent_parts_leave_the_wrapper_empty():
    with pytest.raises(ValueError, match='have no trainable parameters'):
        _build(_Model(adversarial=False), ['decode_head.discriminator'])
