"""Deployment: a checkpoint alone is enough for
inference from any directory, tools/publish_model.py, test-time
augmentation."""
import os
import os.path as osp
import sys

import numpy as np
import pytest
import tool_server
import torch
from e2e_utils import REPO, last_metrics, run_tool, toy_workspace, write_config
from mmengine.config import Config

# every test here starts a tool process or trains a run
pytestmark = pytest.mark.slow

TABLE = 'data/toy/class_embeddings.npz'  # the config's relative path


def _head_cfg(path, **kw):
    return dict(
        type='SIGNHead',
        in_channels=8,
        channels=8,
        num_classes=5,
        class_embeddings=path,
        latent_channels=4,
        generator_hidden=(16, ),
        generator_dropout=0.1,
        discriminator_hidden=(16, ),
        trunk_channels=16,
        **kw)


def test_missing_table_waits_for_the_checkpoint(tmp_path, embedding_table):
    from mmseg.registry import MODELS
    path, names = embedding_table
    real = MODELS.build(_head_cfg(path))
    missing = str(tmp_path / 'nowhere' / 'emb.npz')
    head = MODELS.build(_head_cfg(missing, embed_dim=7))
    assert head.class_names is None
    assert tuple(head.class_embedding.shape) == (5, 7)
    with pytest.raises(FileNotFoundError, match='nowhere'):
        head.require_table()
    # the checkpoint's table (12-d) replaces the placeholder; G follows
    head.load_state_dict(real.state_dict())
    head.require_table()
    torch.testing.assert_close(head.class_embedding, real.class_embedding)
    torch.testing.assert_close(head.generator[0].weight,
                               real.generator[0].weight)
    # a table that exists keeps being checked at build time
    with pytest.raises((ValueError, FileNotFoundError)):
        MODELS.build(_head_cfg(str(tmp_path)))  # a directory


@pytest.fixture(scope='module')
def deploy(tmp_path_factory, toy_root):
    """A workspace with data/toy, a toy SIGN config using the relative
    table path, a training-like checkpoint (with optimizer, teacher, ...)
    and the predictions of the model built with the table file."""
    from mmseg.apis import inference_model
    from mmseg.registry import MODELS
    ws = toy_workspace(tmp_path_factory, toy_root, 'deploy_ws')
    cfg_path = write_config(
        ws / 'sign.py', 'configs/sign/sign_toy.py',
        f'model = dict(decode_head=dict('
        f'class_embeddings={TABLE!r}))')
    cfg = Config.fromfile(cfg_path)
    cwd = os.getcwd()
    os.chdir(ws)
    try:
        torch.manual_seed(0)
        model = MODELS.build(cfg.model)
    finally:
        os.chdir(cwd)
    model.init_weights()
    head = model.decode_head
    from mmseg_sign.datasets.class_names import TOY_CLASSES, TOY_UNSEEN
    unseen = list(TOY_UNSEEN)
    head.set_class_split(unseen)
    model.cfg = cfg
    model.eval()
    img = sorted((ws / 'data' / 'toy' / 'JPEGImages').iterdir())[0]
    cfg.test_pipeline = [
        t for t in cfg.test_pipeline if t['type'] != 'CheckSegLabels'
    ]
    pred = inference_model(model, str(img)).pred_sem_seg.data.numpy()
    state = model.state_dict()
    ckpt = str(ws / 'iter_1000.pth')
    torch.save(
        dict(
            meta=dict(
                dataset_meta=dict(
                    classes=tuple(TOY_CLASSES), unseen_classes=tuple(unseen)),
                experiment_name='toy',
                seed=0,
                iter=1000,
                mmseg_version='1.2.2',
                cfg=cfg.pretty_text,
                hook_msgs=dict(last_ckpt='x')),
            state_dict=state,
            optimizer=dict(segmentor=dict(state={}, param_groups=[])),
            param_schedulers=[],
            message_hub=dict(log_scalars={}),
            sign_teacher={k: v.clone()
                          for k, v in state.items()}), ckpt)
    return ws, cfg_path, ckpt, str(img), pred, model


@pytest.fixture(scope='module')
def published(deploy):
    ws, _, ckpt, *_ = deploy
    out = run_tool(['publish_model.py', ckpt,
                    str(ws / 'pub' / 'sign.pth')],
                   cwd=str(ws))
    path = out.strip().splitlines()[-1]
    return path, out


def test_publish_model(deploy, published):
    from mmseg_sign.engine.hooks.strict_checkpoint_hook import \
        checkpoint_mismatches
    ws, _, ckpt, _, _, model = deploy
    path, out = published
    assert osp.isfile(path) and 'MiB' in out
    stem = osp.basename(path)
    assert stem.startswith('sign-') and len(stem) == len('sign-') + 12
    import hashlib
    with open(path, 'rb') as f:
        assert hashlib.sha256(f.read()).hexdigest()[:8] == stem[5:13]
    assert osp.getsize(path) < osp.getsize(ckpt)
    pub = torch.load(path, map_location='cpu', weights_only=True)
    assert set(pub) == {'state_dict', 'meta'}
    keys = set(pub['state_dict'])
    assert not any(
        k.startswith(('decode_head.generator.', 'decode_head.discriminator.'))
        for k in keys)
    for key in ('decode_head.trunk.0.weight', 'decode_head.conv_seg.weight',
                'decode_head.class_embedding', 'decode_head.unseen_mask'):
        assert key in keys
    meta = pub['meta']
    assert meta['sign_inference_only'] is True
    assert 'hook_msgs' not in meta
    assert len(meta['dataset_meta']['classes']) == 10
    # tools/test.py's strict check accepts the missing G / D ...
    assert checkpoint_mismatches(model, pub) == []
    # ... only in a published checkpoint
    unflagged = dict(pub, meta=dict(meta, sign_inference_only=False))
    problems = checkpoint_mismatches(model, unflagged)
    assert len(problems) == 1 and 'decode_head.generator' in problems[0]


SCRIPT = """
import sys
import numpy as np
import mmseg_sign  # noqa: F401
from mmseg.apis import inference_model, init_model
cfg_path, img, out = sys.argv[1:4]
preds = []
for ckpt in sys.argv[4:]:
    model = init_model(cfg_path, ckpt, device='cpu')
    model.decode_head.require_table()  # the checkpoint gave the table
    assert model.decode_head.class_embedding.abs().sum() > 0
    model.cfg.test_pipeline = [t for t in model.cfg.test_pipeline
                               if t['type'] != 'CheckSegLabels']
    preds.append(inference_model(model, img).pred_sem_seg.data.numpy())
    assert len(model.dataset_meta['classes']) == 10, model.dataset_meta
    # mmseg's high-level inferencer, from the same files
    from mmseg.apis import MMSegInferencer
    inferencer = MMSegInferencer(model=cfg_path, weights=ckpt, device='cpu')
    preds.append(inferencer(img, return_datasamples=True,
                            show=False).pred_sem_seg.data.numpy())
np.save(out, np.stack(preds))
"""


def test_init_model_from_any_directory(tmp_path, deploy, published):
    """In an empty directory (the relative table path does not resolve)
    init_model + inference_model, and MMSegInferencer, give the predictions
    of the model that has the table file, from the training and the
    published checkpoint."""
    _, cfg_path, ckpt, img, pred, _ = deploy
    empty = tmp_path / 'elsewhere'
    empty.mkdir()
    script = tmp_path / 'infer.py'
    script.write_text(SCRIPT)
    out = str(tmp_path / 'preds.npy')
    env = dict(os.environ, PYTHONWARNINGS='ignore', OMP_NUM_THREADS='1')
    proc = tool_server.run(
        [sys.executable,
         str(script), cfg_path, img, out, ckpt, published[0]],
        cwd=str(empty),
        env=env,
        capture_output=True,
        text=True,
        timeout=300)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    assert 'will come from the checkpoint' in proc.stdout + proc.stderr
    preds = np.load(out)
    for p in preds:
        np.testing.assert_array_equal(p, pred)


def test_tools_test_tta_with_published_checkpoint(deploy, published):
    ws, cfg_path, *_ = deploy
    work_dir = str(ws / 'wd_tta')
    run_tool(
        ['test.py', cfg_path, published[0], '--tta', '--work-dir', work_dir],
        cwd=str(ws))
    # rc 0: the strict check passed (mmengine's lenient loader still
    # warns about the G / D keys a published checkpoint leaves out)
    assert 'TestTimeAug' in Config.fromfile(cfg_path).pretty_text
    metrics = last_metrics(work_dir)
    assert 'hIoU' in metrics, metrics


def test_tta_pipeline_in_every_dataset_base():
    import glob
    for path in glob.glob(osp.join(REPO, 'configs/_base_/datasets/*.py')):
        cfg = Config.fromfile(path)
        assert cfg.tta_pipeline[1]['type'] == 'TestTimeAug', path
        kinds = [t[0]['type'] for t in cfg.tta_pipeline[1]['transforms']]
        assert kinds == [
            'Resize', 'RandomFlip', 'LoadAnnotations', 'CheckSegLabels',
            'PackSegInputs'
        ], path
    cfg = Config.fromfile(osp.join(REPO, 'configs/sign/sign_toy.py'))
    assert cfg.tta_model.type == 'SegTTAModel'


def test_inference_apis_check_the_split(deploy):
    """init_model and MMSegInferencer refuse a config whose test split is
    not the checkpoint's; ``allow_split_change=True``
    lets a deliberate cross-split study through."""
    from mmseg.apis import MMSegInferencer, init_model

    from mmseg_sign.datasets.class_names import TOY_CLASSES, TOY_UNSEEN
    ws, cfg_path, ckpt, *_ = deploy
    other = [c for c in TOY_CLASSES if c not in TOY_UNSEEN][:2]
    moved = write_config(
        ws / 'moved_split.py', cfg_path,
        f'test_dataloader = dict(dataset=dict(metainfo=dict('
        f'unseen_classes={other!r})))')
    cwd = os.getcwd()
    os.chdir(ws)
    try:
        # the training config itself is accepted
        assert init_model(cfg_path, ckpt, device='cpu').cfg is not None
        with pytest.raises(ValueError) as err:
            init_model(moved, ckpt, device='cpu')
        msg = str(err.value)
        for name in (*TOY_UNSEEN, *other):
            assert repr(name) in msg, msg
        assert 'test_dataloader.dataset' in msg
        assert 'allow_split_change=True' in msg
        with pytest.raises(ValueError, match='unseen_mask'):
            MMSegInferencer(model=moved, weights=ckpt, device='cpu')
        model = init_model(
            moved,
            ckpt,
            device='cpu',
            cfg_options=dict(allow_split_change=True))
        assert model.decode_head.unseen_mask.sum() == len(TOY_UNSEEN)
    finally:
        os.chdir(cwd)
