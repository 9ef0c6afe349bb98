"""The CPU-vs-CUDA parity harness (mmseg_sign/analysis/parity.py,
tools/analysis/parity.py), checked on a CPU: the same setting twice in
float64 agrees to 1e-6 on every loss and gradient of every stage of the
shipped toy plan; float32 against float64 differs by rounding only; the
pinned draws do not depend on the dtype; the comparison against a
hand-worked example."""
import json

import pytest
import tool_server
import torch
import torch.nn.functional as F
from e2e_utils import REPO, load_tool

from mmseg_sign.analysis.parity import (compare, parse_setting,
                                        pinned_randomness, plan_steps)

TOY = f'{REPO}/configs/sign/sign_toy.py'


def data_options(root):
    return [
        f'model.decode_head.class_embeddings={root}/class_embeddings.npz',
        *(f'{k}.dataset.data_root={root}'
          for k in ('train_dataloader', 'val_dataloader', 'test_dataloader'))
    ]


@pytest.fixture(scope='module')
def parity_rows(toy_root, tmp_path_factory):
    out = tmp_path_factory.mktemp('parity') / 'parity.json'
    load_tool('analysis/parity').main([
        TOY, '--settings', 'cpu:float64', 'cpu:float64', 'cpu:float32',
        '--batch-size', '4', '--out',
        str(out), '--cfg-options', *data_options(toy_root)
    ])
    return json.loads(out.read_text())


def test_float64_against_itself_matches_to_1e6(parity_rows):
    rows = parity_rows['rows']['cpu:float64']
    assert parity_rows['steps'] == [
        'train', 'transfer[real+fake]', 'transfer[synthetic]', 'self_train'
    ]
    terms = {r['term'] for r in rows}
    # every loss and every optimizer's modules of every step are compared
    for term in [
            'train/loss_ce', 'train/loss_kld', 'train/loss_mmd',
            'train/loss_adv_g', 'train/loss_adv_d', 'train/loss_ce_d',
            'train/segmentor/backbone.stem', 'train/segmentor/'
            'neck.encoder', 'train/generator/decode_head.generator.0',
            'train/discriminator/decode_head.discriminator',
            'transfer[real+fake]/loss_ce_fake',
            'transfer[synthetic]/loss_ce_synth',
            'transfer[synthetic]/transfer/decode_head.conv_seg',
            'self_train/self_train/neck.reparam'
    ]:
        assert term in terms, term
    assert max(r['rel_diff'] for r in rows) <= 1e-6
    assert all(r['scale'] > 0 for r in rows if '/loss' in r['term'])


def test_float32_differs_from_float64_by_rounding_only(parity_rows):
    rows = parity_rows['rows']['cpu:float32']
    worst = max(r['rel_diff'] for r in rows)
    assert 0 < worst < 1e-3  # float32 rounding, no term computed otherwise


def test_pinned_draws_do_not_depend_on_dtype():
    draws = []
    for dtype in (torch.float32, torch.float64):
        x = torch.ones(3, 4, dtype=dtype)
        with pinned_randomness(7):
            draws.append([
                torch.randn_like(x).double(),
                torch.randn(2, 3, dtype=dtype).double(),
                torch.randperm(9).double(),
                torch.multinomial(torch.tensor([1., 3.]), 5, True).double(),
                F.dropout(x, 0.5).double()
            ])
    for a, b in zip(*draws):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=0)
    # dropout: kept entries scaled by 1 / (1 - p), the others 0
    assert set(draws[0][-1].unique().tolist()) <= {0.0, 2.0}
    # the functions are torch's own again afterwards
    assert torch.randn_like(torch.ones(2)).shape == (2, )


def test_compare_by_hand():
    ref = {
        'train/loss_ce': torch.tensor(2.0),
        'train/segmentor/neck.encoder.qkv.weight': torch.tensor([1.0, -4.0]),
        'train/segmentor/neck.encoder.in_proj.weight': torch.tensor([0.5, 0.5])
    }
    got = {
        'train/loss_ce': torch.tensor(2.5),
        'train/segmentor/neck.encoder.qkv.weight': torch.tensor([1.0, -3.0]),
        'train/segmentor/neck.encoder.in_proj.weight': torch.tensor([0.5,
                                                                     0.5]),
        'train/loss_extra': torch.tensor(1.0)
    }
    rows = {t: (d, s, w) for t, d, s, w in compare(got, ref)}
    assert rows['train/loss_ce'][0] == pytest.approx(0.25)  # 0.5 / 2
    # the module's worst parameter: |−3 − (−4)| / 4
    assert rows['train/segmentor/neck.encoder'][0] == pytest.approx(0.25)
    assert rows['train/segmentor/neck.encoder'][2].endswith('qkv.weight')
    assert rows['train/loss_extra'][0] == float('inf')  # one side only


def test_settings_and_steps_are_checked():
    assert parse_setting('cpu:float32') == ('cpu', torch.float32, False)
    for bad in ('gpu:float32', 'cpu:float16', 'cpu', 'cpu:float32:tf16'):
        with pytest.raises(ValueError, match='DEVICE:DTYPE'):
            parse_setting(bad)
    # TF32 is CUDA float32's mode; elsewhere a wrong label
    for bad in ('cpu:float32:tf32', 'cpu:float64:tf32', 'cuda:float64:tf32'):
        with pytest.raises(
                ValueError,
                match='tf32 applies to cuda:float32 '
                'only.*drop :tf32'):
            parse_setting(bad)
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match='CUDA is not available'):
            parse_setting('cuda:float32')
        with pytest.raises(ValueError, match='CUDA is not available'):
            parse_setting('cuda:float32:tf32')
    steps = plan_steps([
        dict(name='train', iters=3),
        dict(name='transfer', iters=4, mode='alternate', block_iters=2)
    ])
    assert [(s[0], s[3]) for s in steps] == [('train', 0),
                                             ('transfer[real+fake]', 0),
                                             ('transfer[synthetic]', 2)]


def test_operator_kinds_by_hand():
    from mmseg_sign.analysis.op_audit import kind_of
    assert {
        op: kind_of(op)
        for op in [
            'randn_like', 'bernoulli_.float', '_unique2', 'topk', 'max.dim',
            'max', 'index_put_', 'upsample_nearest2d',
            'upsample_bilinear2d_backward', '_cdist_forward', 'mm',
            'convolution_backward', 'native_group_norm', 'add.Tensor',
            '_scaled_dot_product_efficient_attention'
        ]
    } == {
        'randn_like': 'random',
        'bernoulli_.float': 'random',
        '_unique2': 'order',
        'topk': 'order',
        'max.dim': 'order',
        'max': 'other',
        'index_put_': 'atomic',
        'upsample_nearest2d': 'other',
        'upsample_bilinear2d_backward': 'atomic',
        '_cdist_forward': 'distance',
        'mm': 'matmul',
        'convolution_backward': 'convolution',
        'native_group_norm': 'normalisation',
        'add.Tensor': 'other',
        '_scaled_dot_product_efficient_attention': 'attention'
    }


def test_train_step_operators(toy_root):
    """The audit's inventory of the train step (docs/gpu.md): its random
    draws are z and dropout masks only, no distance kernel (the MMD's
    squared distances are matrix products), one attention forward and
    backward, and the counts are those of a real forward + backward."""
    from mmengine.config import Config
    from mmengine.registry import init_default_scope

    from mmseg_sign.analysis.op_audit import kind_of, step_operators
    from mmseg_sign.analysis.parity import fixed_batch, fixed_weights
    cfg = Config.fromfile(TOY)
    cfg.merge_from_dict(dict(o.split('=', 1) for o in data_options(toy_root)))
    init_default_scope('mmseg')
    batch = fixed_batch(cfg, 2)
    weights = fixed_weights(cfg, batch['metainfo'])
    steps = plan_steps(cfg.train_cfg['stages'])[:1]
    ops = step_operators(cfg, weights, batch, steps)['train']
    random = {op for op in ops if kind_of(op) == 'random'}
    assert random == {'randn_like', 'bernoulli_.float'}
    assert ops['randn_like'] == 1  # the SIM's z
    assert not [op for op in ops if kind_of(op) == 'distance']
    assert [op for op in ops if kind_of(op) == 'attention'] == [
        '_scaled_dot_product_flash_attention_for_cpu',
        '_scaled_dot_product_flash_attention_for_cpu_backward'
    ]
    # tiny ResNet-18: 20 convolutions + SIM + head, each with a backward
    assert ops['convolution'] == ops['convolution_backward'] >= 20


@pytest.mark.slow
def test_the_tool_refuses_tf32_on_a_cpu(tmp_path):
    """``parity.py --settings cpu:float64 cpu:float32:tf32`` ran
    and labelled a CPU row TF32; refused before any work."""
    import os
    import sys
    out = tmp_path / 'p.json'
    proc = tool_server.run([
        sys.executable,
        os.path.join(REPO, 'tools', 'analysis', 'parity.py'),
        os.path.join(REPO, 'configs', 'sign', 'sign_toy.py'), '--settings',
        'cpu:float64', 'cpu:float32:tf32', '--out',
        str(out)
    ],
                           capture_output=True,
                           text=True,
                           timeout=300,
                           env=dict(os.environ, PYTHONWARNINGS='ignore'))
    assert proc.returncode == 2
    assert "setting 'cpu:float32:tf32': tf32 applies to cuda:float32 " \
        'only' in proc.stderr
    assert not out.exists()
