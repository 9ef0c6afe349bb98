"""tools/analysis/latent_probe.py: the probe on a hand-made example, and
the command line on the toy data with ``--cfg-options`` (docs/camvid.md
runs it on held-out training photographs)."""
import json
import os
import os.path as osp
import sys

import pytest
import tool_server
import torch
from e2e_utils import REPO, load_tool, write_config

# every test here starts a tool process or trains a run
pytestmark = pytest.mark.slow

TOOL = osp.join(REPO, 'tools', 'analysis', 'latent_probe.py')


def test_probe_reads_a_code_that_names_the_class():
    probe = load_tool('analysis/latent_probe')
    g = torch.Generator().manual_seed(0)
    labels = torch.randint(0, 3, (300, ), generator=g)
    informative = torch.eye(3)[labels] + 0.01 * torch.randn(
        300, 3, generator=g)
    assert probe.linear_probe(informative[:200], labels[:200],
                              informative[200:], labels[200:], 3) == 1.0
    # a constant code: every pixel gets one class, the accuracy is that
    # class's share of the test pixels
    flat = torch.zeros(300, 3)
    acc = probe.linear_probe(flat[:200], labels[:200], flat[200:],
                             labels[200:], 3)
    shares = torch.bincount(labels[200:], minlength=3).float() / 100
    assert any(abs(acc - s.item()) < 1e-6 for s in shares), (acc, shares)


def test_command_line_with_cfg_options(tmp_path, toy_root):
    from mmengine.config import Config
    from mmengine.registry import init_default_scope
    from mmseg.registry import MODELS

    from mmseg_sign.datasets.class_names import TOY_CLASSES, TOY_UNSEEN
    cfg_path = write_config(
        tmp_path / 'toy.py', 'configs/sign/sign_toy.py',
        f"model = dict(decode_head=dict(class_embeddings="
        f"{osp.join(toy_root, 'class_embeddings.npz')!r}))")
    init_default_scope('mmseg')
    torch.manual_seed(0)
    model = MODELS.build(Config.fromfile(cfg_path).model)
    model.init_weights()
    ckpt = str(tmp_path / 'toy.pth')
    torch.save(
        dict(
            meta=dict(
                dataset_meta=dict(
                    classes=tuple(TOY_CLASSES),
                    unseen_classes=tuple(TOY_UNSEEN))),
            state_dict=model.state_dict()), ckpt)
    env = dict(os.environ, PYTHONWARNINGS='ignore', OMP_NUM_THREADS='1')
    cmd = [
        sys.executable, TOOL, cfg_path, ckpt, '--max-images', '4',
        '--cfg-options', f'test_dataloader.dataset.data_root={toy_root}'
    ]
    proc = tool_server.run(
        cmd, capture_output=True, text=True, env=env, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result['pixels'] > 0
    assert 0 < result['chance'] <= 1
    for key in ('mu_probe_accuracy', 'z_probe_accuracy'):
        assert 0 <= result[key] <= 1
    assert abs(result['snr'] -
               result['mu_abs_mean'] / result['sigma_mean']) < 1e-9
    # the options reach the data: another root is where it reads
    proc = tool_server.run(
        cmd[:-1] + [f'test_dataloader.dataset.data_root={tmp_path / "no"}'],
        capture_output=True,
        text=True,
        env=env,
        cwd=str(tmp_path))
    assert proc.returncode != 0
    assert str(tmp_path / 'no') in proc.stdout + proc.stderr


def test_too_few_images_are_refused_before_any_work(tmp_path):
    """``--max-images 0 / -5 / 1``: half of the images fit the probe and
    half score it, so fewer than 2 is an error at the command line (before:
    an unpack error, an IndexError inside LBFGS)."""
    for n in ('0', '-5', '1'):
        proc = tool_server.run(
            [sys.executable, TOOL, 'cfg.py', 'ckpt.pth', '--max-images', n],
            capture_output=True,
            text=True,
            cwd=str(tmp_path))
        assert proc.returncode == 2, proc.stderr
        assert '--max-images must be 2 or more' in proc.stderr
        assert f'got {n}' in proc.stderr
