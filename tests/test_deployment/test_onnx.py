"""ONNX export: tools/deployment/pytorch2onnx.py on a
briefly trained toy SIGN model, checked with ONNX Runtime (CPU) against
mmseg's own PyTorch inference (``model.test_step``: data preprocessor,
backbone, SIM, C, resize)."""
import copy
import importlib.util
import os.path as osp
import sys

import numpy as np
import pytest
import tool_server
import torch
from e2e_utils import REPO, write_config
from mmengine.config import Config

onnx = pytest.importorskip('onnx')
ort = pytest.importorskip('onnxruntime')

TOOL = osp.join(REPO, 'tools', 'deployment', 'pytorch2onnx.py')
VAL_SIZE = (61, 83)  # odd, not square, not the 64 x 64 crop
TRAIN_ITERS = 80


def load_tool():
    spec = importlib.util.spec_from_file_location('tool_pytorch2onnx', TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


p2o = load_tool()


def train_briefly(model, cfg, iters):
    """``iters`` steps of the ``train`` stage with the config's optimizers
    and training data (so that the logits are not those of a random
    initialisation)."""
    from mmengine.optim import build_optim_wrapper
    from mmengine.runner import Runner
    loader = Runner.build_dataloader(
        dict(
            copy.deepcopy(cfg.train_dataloader),
            num_workers=0,
            persistent_workers=False))
    optim_wrapper = build_optim_wrapper(model,
                                        copy.deepcopy(cfg.optim_wrapper))
    model.train()
    data_iter = iter(loader)
    for _ in range(iters):
        model.train_step(next(data_iter), optim_wrapper)
    model.eval()


@pytest.fixture(scope='module')
def toy(tmp_path_factory):
    """A workspace (data/toy with 61 x 83 test images), the toy config and
    a checkpoint of the toy model after a short training."""
    from mmseg.registry import MODELS

    from mmseg_sign.analysis.toy_data import make_toy_dataset
    from mmseg_sign.datasets.class_names import TOY_CLASSES, TOY_UNSEEN
    ws = tmp_path_factory.mktemp('onnx_ws')
    make_toy_dataset(
        str(ws / 'data' / 'toy'),
        num_train=16,
        num_val=10,
        val_size=VAL_SIZE,
        seed=0)
    cfg_path = str(ws / 'sign_toy.py')
    write_config(
        cfg_path, 'configs/sign/sign_toy.py',
        f"model = dict(decode_head=dict(class_embeddings="
        f"{str(ws / 'data/toy/class_embeddings.npz')!r}))\n"
        f"data_root = {str(ws / 'data/toy')!r}\n"
        "train_dataloader = dict(dataset=dict(data_root=data_root))\n"
        "test_dataloader = dict(dataset=dict(data_root=data_root))\n"
        "val_dataloader = test_dataloader\n")
    cfg = Config.fromfile(cfg_path)
    torch.manual_seed(0)
    model = MODELS.build(cfg.model)
    model.init_weights()
    model.decode_head.set_class_split(list(TOY_UNSEEN))
    train_briefly(model, cfg, TRAIN_ITERS)
    ckpt = str(ws / 'sign_toy.pth')
    torch.save(
        dict(
            meta=dict(
                dataset_meta=dict(
                    classes=tuple(TOY_CLASSES),
                    unseen_classes=tuple(TOY_UNSEEN))),
            state_dict=model.state_dict()), ckpt)
    return ws, cfg_path, ckpt


@pytest.fixture(scope='module')
def reference(toy):
    """mmseg's PyTorch predictions on the test set: ``(image uint8
    3 x H x W, seg_logits K x H x W)`` per image, from ``init_model`` and
    ``model.test_step`` (the path ``tools/test.py`` runs)."""
    from mmengine.runner import Runner
    from mmseg.apis import init_model
    ws, cfg_path, ckpt = toy
    cfg = Config.fromfile(cfg_path)
    model = init_model(cfg, ckpt, device='cpu')
    loader = Runner.build_dataloader(
        dict(
            copy.deepcopy(cfg.test_dataloader),
            num_workers=0,
            persistent_workers=False))
    out = []
    with torch.no_grad():
        for data in loader:
            sample = model.test_step(data)[0]
            out.append((data['inputs'][0], sample.seg_logits.data))
    return model, out


def io_dims(path):
    proto = onnx.load(path)
    return {
        v.name:
        [d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim]
        for v in (*proto.graph.input, *proto.graph.output)
    }


def ort_run(path, img):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    sess = ort.InferenceSession(
        path, options, providers=['CPUExecutionProvider'])
    return sess.run(None, {'img': np.ascontiguousarray(img, np.float32)})[0]


def agreement(a, b):
    return 100.0 * float((np.asarray(a) == np.asarray(b)).mean())


@pytest.mark.slow
def test_reference_is_not_trivial(reference):
    """The trained toy model predicts several classes: an argmax agreement
    on it means something."""
    _, preds = reference
    classes = set()
    for _, logits in preds:
        classes |= set(logits.argmax(0).unique().tolist())
    assert len(classes) >= 3, classes
    assert tuple(preds[0][1].shape) == (10, *VAL_SIZE)


def test_fixed_shape(toy, reference, tmp_path, capsys):
    ws, cfg_path, ckpt = toy
    out = str(tmp_path / 'fixed.onnx')
    result = p2o.main([
        cfg_path, ckpt, '--out', out, '--shape', *map(str, VAL_SIZE),
        '--verify'
    ])
    printed = capsys.readouterr().out
    assert 'max abs logit difference' in printed
    assert 'argmax agreement' in printed
    assert result['images'] == 10 and result['skipped'] == 0
    assert result['agreement'] >= 99.9 and result['max_abs_diff'] < 1e-3
    assert io_dims(out) == {
        'img': [1, 3, *VAL_SIZE],
        'logits': [1, 10, *VAL_SIZE]
    }
    # independent of the tool: ONNX Runtime on the raw (BGR, 0-255)
    # images against mmseg's test_step
    _, preds = reference
    diffs, agree = [], []
    for img, logits in preds:
        got = ort_run(out, img[None].float().numpy())[0]
        diffs.append(np.abs(got - logits.numpy()).max())
        agree.append(agreement(got.argmax(0), logits.argmax(0).numpy()))
    assert max(diffs) < 1e-3 and min(agree) >= 99.9, (diffs, agree)
    # the graph normalises itself: RGB input (what the graph must not be
    # given) changes the prediction
    img = preds[0][0][None].float().numpy()
    rgb = ort_run(out, img[:, ::-1])[0]
    assert np.abs(rgb - preds[0][1].numpy()).max() > 1e-2
    # a fixed graph takes only its own size
    with pytest.raises(Exception):
        ort_run(out, np.zeros((1, 3, 64, 64), np.float32))


@pytest.mark.parametrize(
    'exporter',
    ['torchscript',
     pytest.param('dynamo', marks=pytest.mark.slow)])
def test_dynamic_shape(toy, reference, tmp_path, exporter):
    """Traced at 64 x 64, run at the test images' 61 x 83, at batch 2 of
    37 x 50 and at 8 x 8 (a 1 x 1 feature map for the SIM's attention)."""
    if exporter == 'dynamo':
        pytest.importorskip('onnxscript')
    ws, cfg_path, ckpt = toy
    out = str(tmp_path / 'dynamic.onnx')
    result = p2o.main([
        cfg_path, ckpt, '--out', out, '--shape', '64', '64', '--dynamic',
        '--verify', '--exporter', exporter
    ])
    assert result['images'] == 10 and result['agreement'] >= 99.9
    assert result['max_abs_diff'] < 1e-3
    assert io_dims(out) == {
        'img': ['batch', 3, 'height', 'width'],
        'logits': ['batch', 10, 'height', 'width']
    }
    model, preds = reference
    got = ort_run(out, preds[1][0][None].float().numpy())[0]
    np.testing.assert_allclose(got, preds[1][1].numpy(), atol=1e-3)
    for shape in [(2, 3, 37, 50), (1, 3, 8, 8)]:
        imgs = torch.randint(
            0,
            256,
            shape,
            dtype=torch.uint8,
            generator=torch.Generator().manual_seed(1))
        want = mmseg_logits(model, imgs)
        got = ort_run(out, imgs.float().numpy())
        assert got.shape == (shape[0], 10, *shape[2:])
        np.testing.assert_allclose(got, want, atol=1e-3)


def mmseg_logits(model, imgs):
    """``model.test_step`` on a batch of raw uint8 images."""
    from mmseg.structures import SegDataSample
    samples = []
    for img in imgs:
        sample = SegDataSample()
        sample.set_metainfo(
            dict(
                img_shape=tuple(img.shape[1:]),
                ori_shape=tuple(img.shape[1:])))
        samples.append(sample)
    with torch.no_grad():
        out = model.test_step(dict(inputs=list(imgs), data_samples=samples))
    return np.stack([s.seg_logits.data.numpy() for s in out])


def test_label_map_output(toy, reference, tmp_path):
    ws, cfg_path, ckpt = toy
    out = str(tmp_path / 'seg.onnx')
    result = p2o.main([
        cfg_path, ckpt, '--out', out, '--dynamic', '--output', 'seg',
        '--verify'
    ])
    assert result['agreement'] >= 99.9
    assert io_dims(out) == {
        'img': ['batch', 3, 'height', 'width'],
        'seg': ['batch', 'height', 'width']
    }
    _, preds = reference
    imgs = np.stack([img.float().numpy() for img, _ in preds[:2]])
    got = ort_run(out, imgs)
    assert got.dtype == np.int64 and got.shape == (2, *VAL_SIZE)
    want = np.stack([logits.argmax(0).numpy() for _, logits in preds[:2]])
    assert agreement(got, want) >= 99.9


def test_padded_attention_heads(toy, reference, tmp_path):
    """16 heads of 4 channels, a head size that is no multiple of 8 (the
    SIM's attention pads such heads for CUDA's fused kernels): traced with
    dynamic H, W, it gives PyTorch's logits (the same weights, read as 16
    heads)."""
    from mmseg.apis import init_model
    ws, cfg_path, ckpt = toy
    out = str(tmp_path / 'heads16.onnx')
    result = p2o.main([
        cfg_path, ckpt, '--out', out, '--dynamic', '--verify', '--cfg-options',
        'model.neck.num_heads=16'
    ])
    assert result['agreement'] >= 99.9 and result['max_abs_diff'] < 1e-3
    model = init_model(
        Config.fromfile(cfg_path), ckpt, device='cpu', cfg_options=None)
    model.neck.encoder.num_heads = 16
    imgs = torch.randint(
        0,
        256, (1, 3, 45, 29),
        dtype=torch.uint8,
        generator=torch.Generator().manual_seed(2))
    want = mmseg_logits(model, imgs)
    np.testing.assert_allclose(
        ort_run(out,
                imgs.float().numpy()), want, atol=1e-3)
    # and the 16 heads really differ from the 4 the model was trained with
    assert np.abs(want - mmseg_logits(reference[0], imgs)).max() > 1e-4


def test_what_cannot_be_exported(toy, tmp_path):
    ws, cfg_path, ckpt = toy
    out = str(tmp_path / 'x.onnx')
    with pytest.raises(
            p2o.ExportError, match="mode='slide'.*"
            "model.test_cfg.mode=whole"):
        p2o.main([
            cfg_path, ckpt, '--out', out, '--cfg-options',
            'model.test_cfg.mode=slide', 'model.test_cfg.crop_size=[32,32]',
            'model.test_cfg.stride=[16,16]'
        ])
    with pytest.raises(p2o.ExportError, match='pads test images'):
        p2o.main([
            cfg_path, ckpt, '--out', out, '--cfg-options',
            'model.data_preprocessor.test_cfg.size_divisor=32'
        ])
    # weights that do not fit the model: no graph of random weights
    state = torch.load(ckpt, map_location='cpu', weights_only=False)
    del state['state_dict']['decode_head.conv_seg.weight']
    partial = str(tmp_path / 'partial.pth')
    torch.save(state, partial)
    with pytest.raises(p2o.ExportError, match='decode_head.conv_seg.weight'):
        p2o.main([cfg_path, partial, '--out', out])
    assert not osp.exists(out)  # refused before exporting
    # a fixed-size graph cannot be verified on test images of another size
    with pytest.raises(p2o.ExportError, match='--dynamic'):
        p2o.main(
            [cfg_path, ckpt, '--out', out, '--shape', '64', '64', '--verify'])


@pytest.mark.slow
def test_command_line_error(toy, tmp_path):
    """As a user runs it: a clear message and a non-zero exit, no
    traceback."""
    ws, cfg_path, ckpt = toy
    proc = tool_server.run([
        sys.executable, TOOL, cfg_path, ckpt, '--out',
        str(tmp_path / 'x.onnx'), '--cfg-options', 'model.test_cfg.mode=slide'
    ],
                           cwd=str(ws),
                           capture_output=True,
                           text=True,
                           timeout=300,
                           env=dict(
                               __import__('os').environ,
                               OMP_NUM_THREADS='1',
                               PYTHONWARNINGS='ignore'))
    assert proc.returncode != 0
    assert "mode='slide' cannot be exported" in proc.stderr
    assert 'Traceback' not in proc.stderr
    assert not (tmp_path / 'x.onnx').exists()


@pytest.mark.slow
def test_export_needs_no_gensim(toy, tmp_path):
    """A deployed model needs its class table, not gensim: with gensim not
    importable, ``import mmseg_sign.models`` and the export tool run (the
    table comes from the checkpoint)."""
    ws, cfg_path, ckpt = toy
    out = str(tmp_path / 'no_gensim.onnx')
    code = (
        "import runpy, sys\n"
        "sys.modules['gensim'] = None  # import gensim -> ImportError\n"
        "import mmseg_sign.models\n"
        f"sys.argv = [{TOOL!r}, {cfg_path!r}, {ckpt!r}, '--out', {out!r}]\n"
        f"runpy.run_path({TOOL!r}, run_name='__main__')\n"
        "assert not any(m.startswith('gensim.') for m in sys.modules)\n"
        "print('gensim-free export ok')\n")
    proc = tool_server.run([sys.executable, '-c', code],
                           cwd=str(ws),
                           capture_output=True,
                           text=True,
                           timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert 'gensim-free export ok' in proc.stdout
    assert osp.getsize(out) > 0
    # the guard is real: the builder does need gensim
    proc = tool_server.run([
        sys.executable, '-c', "import sys; sys.modules['gensim'] = None\n"
        "from mmseg_sign.embeddings import build_class_embeddings"
    ],
                           capture_output=True,
                           text=True,
                           timeout=120)
    assert proc.returncode != 0 and 'gensim' in proc.stderr
