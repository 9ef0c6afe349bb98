"""Checks of a run's plan and resumed state against the model, before an
iteration: a posterior latent for a neck without one, and a damaged
feature-size cache in a resumed checkpoint."""
from types import SimpleNamespace

import pytest
import torch
from model_utils import tiny_model

from mmseg_sign.engine.hooks.self_training_teacher_hook import (
    check_feature_sizes, feature_size_of)
from mmseg_sign.engine.runner.stage_plan_loop import check_plan_fits_model
from mmseg_sign.models.necks import NoisePriorNeck
from mmseg_sign.structures import StagePlan


def plan(latent):
    return StagePlan([
        dict(name='train', iters=2),
        dict(name='transfer', iters=2, block_iters=1, latent=latent)
    ])


def test_a_posterior_latent_needs_a_neck_with_a_posterior(embedding_table):
    zs3 = SimpleNamespace(neck=NoisePriorNeck(in_channels=8, channels=8))
    check_plan_fits_model(plan('prior'), zs3)
    with pytest.raises(
            ValueError,
            match=r"stages\[1\] \(transfer\): latent='posterior' .* "
            r'NoisePriorNeck has no posterior.*stages\.1\.latent=prior'):
        check_plan_fits_model(plan('posterior'), zs3)
    sign = tiny_model(embedding_table[0])  # the SIM has one
    check_plan_fits_model(plan('posterior'), sign)


def test_a_damaged_feature_size_cache_is_refused(embedding_table):
    torch.manual_seed(0)
    model = tiny_model(embedding_table[0]).train()
    # the size a training-mode forward gives, as the cache fills it
    with torch.no_grad():
        real = tuple(model.extract_feat(torch.zeros(1, 3, 16, 24))[0].shape)
    bn = model.backbone.stem[1]
    stats = bn.running_mean.clone()
    rng = torch.get_rng_state()
    assert feature_size_of(model, 16, 24) == real[2:]
    # nothing of the run changed: random state, BN statistics, mode
    assert torch.equal(torch.get_rng_state(), rng)
    assert torch.equal(bn.running_mean, stats) and model.training
    model.feature_sizes = [[16, 24, *real[2:]]]
    check_feature_sizes(model, 'ckpt.pth')
    model.feature_sizes = [[16, 24, 1, 1]]
    with pytest.raises(
            ValueError,
            match=r"ckpt\.pth: its checkpoint\['sign_feature_sizes'\] says a "
            rf'16×24 input gives a 1×1 feature map, but this model gives '
            rf'{real[2]}×{real[3]}'):
        check_feature_sizes(model, 'ckpt.pth')
    with pytest.raises(ValueError, match=r'feature sizes must be'):
        model.feature_sizes = [['a']]
