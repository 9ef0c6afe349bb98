"""Self-training computes the backbone's frozen part once for the teacher and
the student (EfficientNetLite's ``frozen_stages``): the same numbers, bit
for bit, as computing it twice."""
import copy

import pytest
import torch
from mmengine.config import Config
from mmseg.registry import MODELS

from mmseg_sign.analysis.benchmark import (benchmark_models, optim_wrappers,
                                           random_batch)
from mmseg_sign.structures.stage_plan import StagePlan

LITE0_SIGN = 'configs/sign/sign_lite0_camvid-480x360.py'


@pytest.mark.parametrize('out_indices, frozen_stages', [((2, 4, 6), 3),
                                                        ((0, 1, 2, 6, 7), 3),
                                                        ((1, 5), 0),
                                                        ((2, 6), -1),
                                                        ((3, 6), 7)])
def test_forward_from_the_frozen_part_is_forward(out_indices, frozen_stages):
    torch.manual_seed(0)
    backbone = MODELS.build(
        dict(
            type='EfficientNetLite',
            out_indices=out_indices,
            frozen_stages=frozen_stages)).eval()
    x = torch.randn(1, 3, 48, 40)
    with torch.no_grad():
        whole = backbone(x)
        frozen = backbone.forward_frozen(x)
        parts = backbone(x, frozen=frozen)
    assert len(whole) == len(out_indices) == len(parts)
    for a, b in zip(whole, parts):
        assert torch.equal(a, b)
    # the frozen part is the stem and groups 0 .. frozen_stages - 1
    assert len(backbone.frozen_modules()) == max(frozen_stages + 1, 0)
    n_frozen_outs = sum(i < frozen_stages for i in out_indices)
    assert len(frozen[1]) == n_frozen_outs


def _self_train(model, ow, opts, batch, share):
    """Two self-training iterations; how often the teacher ran its stem."""
    model.train()
    model.set_stage('self_train', **opts)
    model.teacher_shares_frozen &= share
    calls = []
    model.teacher.backbone.stem.register_forward_hook(
        lambda *args: calls.append(1))
    torch.manual_seed(1)
    return [model.train_step(batch, ow) for _ in range(2)], len(calls)


@pytest.mark.slow
def test_self_training_shares_the_frozen_part_bit_for_bit():
    """The shipped Lite0 SIGN model (stem and three groups frozen), two
    self-training iterations from one state and seed: sharing the frozen
    part with the teacher changes no loss, weight or statistic."""
    cfg = Config.fromfile(LITE0_SIGN)
    torch.manual_seed(0)
    models = benchmark_models(cfg, 'cpu', None, (64, 64))
    shared = models['sign']
    twice = copy.deepcopy(shared)
    batch = random_batch(2, (64, 64), models['num_classes'], models['unseen'])
    opts = {
        k: v
        for k, v in StagePlan.from_config(cfg)[2].items()
        if k not in ('name', 'iters')
    }
    logs_twice, stem_twice = _self_train(twice,
                                         optim_wrappers(cfg, twice, None),
                                         opts, batch, False)
    logs_shared, stem_shared = _self_train(shared, models['sign_ow'], opts,
                                           batch, True)
    assert shared.teacher_shares_frozen and not twice.teacher_shares_frozen
    assert stem_shared == 0 and stem_twice == 2
    for a, b in zip(logs_shared, logs_twice):
        assert a.keys() == b.keys()
        for k in a:
            assert torch.equal(torch.as_tensor(a[k]), torch.as_tensor(b[k])), k
    state_a, state_b = shared.state_dict(), twice.state_dict()
    assert state_a.keys() == state_b.keys()
    for k in state_a:
        assert torch.equal(state_a[k], state_b[k]), k


def test_a_teacher_with_other_frozen_weights_computes_its_own():
    cfg = Config.fromfile(LITE0_SIGN)
    torch.manual_seed(0)
    model = benchmark_models(cfg, 'cpu', None, (64, 64))['sign']
    state = {k: v.clone() for k, v in model.state_dict().items()}
    state['backbone.stem.conv.weight'] += 1e-3
    model.build_teacher(state)
    assert not model.teacher_shares_frozen
    model.build_teacher()
    assert model.teacher_shares_frozen
    # a student whose frozen modules were put in training mode (BN
    # statistics updating) no longer shares
    model.train()
    assert model._frozen_part(torch.zeros(1, 3, 32, 32)) is not None
    model.backbone.stem.train()
    assert model._frozen_part(torch.zeros(1, 3, 32, 32)) is None
