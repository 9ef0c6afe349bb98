"""RandomSourcesHook (mmseg_sign/engine/hooks/random_sources_hook.py): one
seed, one start on every device (the weights initialised on the CPU, then
moved), and the decomposition's own seeds for the initial weights and the
model's draws. The reference start is built by hand: mmengine's seeding,
the model built from the config, ``init_weights``."""
import os.path as osp
from types import SimpleNamespace

import pytest
import torch
from e2e_utils import REPO
from mmengine.config import Config
from mmengine.registry import init_default_scope
from mmengine.runner import Runner, set_random_seed
from mmseg.registry import MODELS

from mmseg_sign.engine.hooks import RandomSourcesHook


def toy_cfg(toy_root, work_dir, seed=0, **hook):
    cfg = Config.fromfile(osp.join(REPO, 'configs', 'sign', 'sign_toy.py'))
    cfg.work_dir = str(work_dir)
    cfg.randomness = dict(seed=seed)
    cfg.model.decode_head.class_embeddings = osp.join(toy_root,
                                                      'class_embeddings.npz')
    for loader in ('train_dataloader', 'val_dataloader', 'test_dataloader'):
        cfg[loader].dataset.data_root = toy_root
    cfg.default_hooks.sign_random.update(hook)
    return cfg


def start(runner):
    """The hook's ``before_run`` (what ``Runner.train`` calls before
    mmengine's own ``init_weights``), then mmengine's call."""
    hook, = [h for h in runner.hooks if isinstance(h, RandomSourcesHook)]
    hook.before_run(runner)
    initialised = runner.model.is_init
    runner._init_model_weights()  # a no-op once initialised
    return {
        k: v.detach().cpu().clone()
        for k, v in runner.model.state_dict().items()
    }, initialised


def reference_start(cfg, seed):
    """By hand: mmengine seeds every generator, builds the model on the
    CPU, then it is initialised on the CPU."""
    init_default_scope('mmseg')
    set_random_seed(seed)
    model = MODELS.build(cfg.model)
    model.init_weights()
    return model.state_dict()


def assert_equal_states(a, b):
    assert a.keys() == b.keys()
    for k in a:
        torch.testing.assert_close(a[k], b[k], rtol=0, atol=0, msg=k)


def test_the_schedules_initialise_on_the_cpu(toy_root, tmp_path):
    cfg = toy_cfg(toy_root, tmp_path / 'a', seed=3)
    runner = Runner.from_cfg(cfg)
    state, initialised = start(runner)
    assert initialised  # by the hook, before mmengine's call
    assert_equal_states(state, reference_start(cfg, 3))
    # switched off: mmengine initialises (on the run's device)
    off = Runner.from_cfg(
        toy_cfg(toy_root, tmp_path / 'b', seed=3, init_on_cpu=False))
    hook, = [h for h in off.hooks if isinstance(h, RandomSourcesHook)]
    hook.before_run(off)
    assert not off.model.is_init


@pytest.mark.slow
def test_init_seed_is_the_only_source_of_the_initial_weights(
        toy_root, tmp_path):
    starts, streams = [], []
    for i, (seed, init_seed) in enumerate([(1, 5), (2, 5), (1, 6)]):
        runner = Runner.from_cfg(
            toy_cfg(toy_root, tmp_path / str(i), seed, init_seed=init_seed))
        before = torch.get_rng_state()
        starts.append(start(runner)[0])
        # the run's own generator is left as it was
        assert torch.equal(torch.get_rng_state(), before)
        streams.append(before)
    assert_equal_states(starts[0], starts[1])  # another run seed
    assert not torch.equal(starts[0]['backbone.stem.0.weight'],
                           starts[2]['backbone.stem.0.weight'])
    assert not torch.equal(streams[0], streams[1])
    # drawn as at construction: the SIM's mu / logvar convs start near 0
    # (std 0.01, ReparameterizationModule.reset_parameters), not at torch's
    # default (uniform, std ~0.02 for 64·9 inputs); BN at weight 1
    for state in starts:
        mu = [v for k, v in state.items() if k.endswith('mu.weight')]
        assert mu and all(0.005 < float(w.std()) < 0.015 for w in mu)
        bn = state['backbone.stem.1.weight']
        assert torch.equal(bn, torch.ones_like(bn))


def test_draws_seed_reseeds_before_the_first_iteration_only():
    hook = RandomSourcesHook(draws_seed=11)
    torch.manual_seed(0)
    hook.before_train(SimpleNamespace(iter=0))
    want = torch.Generator().manual_seed(11).get_state()
    assert torch.equal(torch.get_rng_state(), want)
    torch.manual_seed(0)
    before = torch.get_rng_state()
    hook.before_train(SimpleNamespace(iter=40))  # resumed: the checkpoint's
    assert torch.equal(torch.get_rng_state(), before)
    RandomSourcesHook().before_train(SimpleNamespace(iter=0))  # default
    assert torch.equal(torch.get_rng_state(), before)


@pytest.mark.parametrize('kwargs', [
    dict(init_seed=-1),
    dict(draws_seed='3'),
    dict(init_seed=True),
    dict(init_on_cpu='yes')
])
def test_bad_settings(kwargs):
    with pytest.raises(ValueError, match='RandomSourcesHook'):
        RandomSourcesHook(**kwargs)


@pytest.mark.skipif(not torch.cuda.is_available(), reason='needs a GPU')
def test_one_seed_one_start_on_a_gpu(toy_root, tmp_path):
    """On a GPU mmengine moves the model there before initialising it; with
    the hook its initial weights are the CPU run's, to the bit."""
    cfg = toy_cfg(toy_root, tmp_path / 'gpu', seed=3)
    runner = Runner.from_cfg(cfg)
    assert next(runner.model.parameters()).is_cuda
    state, _ = start(runner)
    assert next(runner.model.parameters()).is_cuda  # moved back
    assert_equal_states(state, reference_start(cfg, 3))
