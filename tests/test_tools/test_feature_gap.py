"""tools/analysis/feature_gap.py: the per-class comparison on a hand-made
example, and the command line on the toy data (docs/camvid.md runs it on
held-out training photographs)."""
import json
import math
import os
import os.path as osp
import sys

import pytest
import tool_server
import torch
from e2e_utils import REPO, load_tool, write_config

TOOL = osp.join(REPO, 'tools', 'analysis', 'feature_gap.py')


def test_rows_on_a_hand_made_example():
    gap = load_tool('analysis/feature_gap')
    eye = torch.eye(3)
    d = torch.tensor([0.0, 0.0, 0.5])
    # real: class a around e0, b around e1 (mean e_c, spread 0.5); no c
    real = {
        0: torch.stack([eye[0] + d, eye[0] - d]),
        1: torch.stack([eye[1] + d, eye[1] - d])
    }
    # generated: a drawn where b is (the transfer's mistake), b and c right
    generated = {0: eye[[1, 1]], 1: eye[[1, 1]], 2: eye[[2, 2]]}
    rows = gap.gap_rows(real, generated, lambda x: x, ['a', 'b', 'c'],
                        {'a', 'c'})
    a, b, c = rows
    assert a['split'] == 'unseen' and b['split'] == 'seen'
    assert a['C generated'] == 0.0 and b['C generated'] == 1.0
    assert c['C generated'] == 1.0
    assert a['C real'] == b['C real'] == 1.0
    assert a['real pixels'] == 2
    assert a['nearest real'] == 'b' and b['nearest real'] == 'b'
    # centred on (e0 + e1) / 2: a's generated mean e1 points away from
    # a's real one
    assert abs(a['cos'] + 1) < 1e-6 and abs(b['cos'] - 1) < 1e-6
    assert math.isclose(a['gap / spread'], math.sqrt(2) / 0.5, rel_tol=1e-6)
    assert b['gap / spread'] < 1e-6
    # c has no real pixel: only what needs none
    assert set(c) == {'class', 'split', 'C generated', 'nearest real'}
    table = gap.markdown(rows)
    assert '| a | unseen | 2 | 100.0 % | 0.0 % | -1.000 | b | 2.828 |' in \
        table
    assert '| c | unseen | – | – | 100.0 % | – |' in table


def _toy_checkpoint(tmp_path, toy_root, config):
    from mmengine.config import Config
    from mmengine.registry import init_default_scope
    from mmseg.registry import MODELS

    from mmseg_sign.datasets.class_names import TOY_CLASSES, TOY_UNSEEN
    cfg_path = write_config(
        tmp_path / osp.basename(config), config,
        f"model = dict(decode_head=dict(class_embeddings="
        f"{osp.join(toy_root, 'class_embeddings.npz')!r}))"
        if 'sign' in config else '')
    init_default_scope('mmseg')
    torch.manual_seed(0)
    model = MODELS.build(Config.fromfile(cfg_path).model)
    model.init_weights()
    ckpt = str(tmp_path / (osp.basename(config) + '.pth'))
    torch.save(
        dict(
            meta=dict(
                dataset_meta=dict(
                    classes=tuple(TOY_CLASSES),
                    unseen_classes=tuple(TOY_UNSEEN))),
            state_dict=model.state_dict()), ckpt)
    return cfg_path, ckpt


@pytest.mark.slow
def test_command_line_on_the_toy(tmp_path, toy_root):
    from mmseg_sign.datasets.class_names import TOY_CLASSES, TOY_UNSEEN
    cfg_path, ckpt = _toy_checkpoint(tmp_path, toy_root,
                                     'configs/sign/sign_toy.py')
    env = dict(os.environ, PYTHONWARNINGS='ignore', OMP_NUM_THREADS='1')
    data = f'test_dataloader.dataset.data_root={toy_root}'
    cmd = [
        sys.executable, TOOL, cfg_path, ckpt, '--max-images', '4', '--samples',
        '50', '--cfg-options', data
    ]
    proc = tool_server.run(
        cmd, capture_output=True, text=True, env=env, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.strip().splitlines()
    rows = json.loads(lines[-1])
    assert [r['class'] for r in rows] == list(TOY_CLASSES)
    assert {r['class'] for r in rows if r['split'] == 'unseen'} == \
        set(TOY_UNSEEN)
    for row in rows:
        assert 0 <= row['C generated'] <= 1
        assert row['nearest real'] in TOY_CLASSES
        if 'real pixels' in row:
            assert 1 <= row['real pixels'] <= 50
            assert 0 <= row['C real'] <= 1 and -1 <= row['cos'] <= 1
    assert any('real pixels' in r for r in rows)
    assert sum(line.startswith('| ') for line in lines) == len(rows) + 1
    # a head without G: said, before any image is read
    fcn_cfg, fcn_ckpt = _toy_checkpoint(
        tmp_path, toy_root, 'configs/baselines/fcn_r18-tiny_toy.py')
    proc = tool_server.run(
        [sys.executable, TOOL, fcn_cfg, fcn_ckpt, '--cfg-options', data],
        capture_output=True,
        text=True,
        env=env,
        cwd=str(tmp_path))
    assert proc.returncode == 2
    assert 'has no generator G' in proc.stderr, proc.stderr[-2000:]
    # another model's checkpoint: said, nothing computed
    proc = tool_server.run(
        [sys.executable, TOOL, cfg_path, fcn_ckpt, '--cfg-options', data],
        capture_output=True,
        text=True,
        env=env,
        cwd=str(tmp_path))
    assert proc.returncode == 1 and proc.stdout == ''
    assert 'error: The checkpoint' in proc.stderr, proc.stderr[-2000:]
