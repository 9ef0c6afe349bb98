"""The tools' shared command line (:mod:`mmseg_sign.utils.cli`), through
the tools: a module added by ``--cfg-options custom_imports.imports=...``
is imported (mmengine imports a config's ``custom_imports`` only
when the file is read), and a ``--cfg-options`` key that names nothing is
refused."""
import os
import os.path as osp
import subprocess
import sys

import pytest
from e2e_utils import REPO

TOY = osp.join(REPO, 'configs', 'sign', 'sign_toy.py')


@pytest.mark.slow
@pytest.mark.parametrize('tool', ['train.py', 'test.py'])
def test_custom_imports_from_the_command_line_are_imported(tmp_path, tool):
    # the module stops the tool as it is imported: proof, without training
    (tmp_path / 'my_sign_module.py'
     ).write_text("raise SystemExit('my_sign_module imported')\n")
    ckpt = tmp_path / 'empty.pth'
    ckpt.write_bytes(b'')
    args = [TOY] + ([str(ckpt)] if tool == 'test.py' else []) + [
        '--work-dir',
        str(tmp_path / 'wd'), '--cfg-options',
        'custom_imports.imports=[mmseg_sign,my_sign_module]'
    ]
    env = dict(
        os.environ,
        PYTHONPATH=str(tmp_path),
        OMP_NUM_THREADS='1',
        PYTHONWARNINGS='ignore')
    proc = subprocess.run(
        [sys.executable, osp.join(REPO, 'tools', tool), *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300)
    assert 'my_sign_module imported' in proc.stdout + proc.stderr, \
        (proc.stdout + proc.stderr)[-2000:]


def test_zs3net_with_a_discriminator_no_wrapper_steps_is_refused(tmp_path):
    """ZS3Net with ``adversarial=True`` built a D that no
    optimizer wrapper held: adversarial losses logged, D never changed.
    Refused when the wrappers are built, naming both fixes. The ZS3
    configs keep SIGN's wrappers (D + C), so ``adversarial=True``
    there trains D, and ``False`` leaves C alone in them."""
    import numpy as np
    from mmengine.config import Config
    from mmengine.optim import build_optim_wrapper
    from mmengine.registry import init_default_scope
    from mmseg.registry import MODELS

    from mmseg_sign.embeddings import save_class_embeddings
    init_default_scope('mmseg')
    cfg = Config.fromfile(osp.join(REPO, 'configs/baselines/zs3net_toy.py'))
    table = str(tmp_path / 'emb.npz')
    save_class_embeddings(table, [f'c{i}' for i in range(10)],
                          np.eye(10, 600, dtype=np.float32))
    cfg.model.decode_head.update(class_embeddings=table, adversarial=True)
    model = MODELS.build(cfg.model)
    held = {
        id(p)
        for p in build_optim_wrapper(model, cfg.optim_wrapper)
        ['discriminator'].optimizer.param_groups[0]['params']
    }
    assert {id(p) for p in model.decode_head.discriminator.parameters()} \
        <= held
    c_only = ['decode_head.trunk', 'decode_head.conv_seg']
    for name in ('discriminator', 'transfer', 'self_train_discriminator'):
        cfg.optim_wrapper[name].modules = c_only
    with pytest.raises(
            ValueError,
            match=r'decode_head\.discriminator is '
            r'built .* no optimizer wrapper steps it.*'
            r'adversarial=False'):
        build_optim_wrapper(model, cfg.optim_wrapper)
    cfg.model.decode_head.adversarial = False  # the shipped config
    build_optim_wrapper(MODELS.build(cfg.model), cfg.optim_wrapper)


@pytest.mark.slow
@pytest.mark.parametrize('tool', ['train.py', 'test.py'])
def test_a_cfg_options_key_that_names_nothing_is_refused(tmp_path, tool):
    """A misspelled top-level key (``alow_split_change=True``) was
    added to the config and read by nothing; the tools now stop before
    anything runs, naming the closest keys."""
    ckpt = tmp_path / 'empty.pth'
    ckpt.write_bytes(b'')
    args = [TOY] + ([str(ckpt)] if tool == 'test.py' else []) + [
        '--work-dir',
        str(tmp_path / 'wd'), '--cfg-options', 'alow_split_change=True'
    ]
    env = dict(os.environ, OMP_NUM_THREADS='1', PYTHONWARNINGS='ignore')
    proc = subprocess.run(
        [sys.executable, osp.join(REPO, 'tools', tool), *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "error: --cfg-options alow_split_change=...: the config has no " \
        "'alow_split_change' and nothing reads it" in out, out[-2000:]
    assert 'did you mean allow_split_change' in out
    assert 'Traceback' not in out
    assert not (tmp_path / 'wd').exists()  # nothing ran


@pytest.mark.slow
@pytest.mark.parametrize('tool', ['train.py', 'test.py'])
def test_a_config_that_is_not_there_is_named(tmp_path, tool):
    """A mistyped config path is an argparse error (exit code 2) that names
    the path and where it was looked for, not mmengine's traceback."""
    args = ['configs/sign/sign_tyo.py'
            ] + (['x.pth'] if tool == 'test.py' else [])
    proc = subprocess.run(
        [sys.executable, osp.join(REPO, 'tools', tool), *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, OMP_NUM_THREADS='1'))
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert ("config 'configs/sign/sign_tyo.py': no such file (relative "
            f"paths are read from {tmp_path})") in proc.stderr
    assert 'Traceback' not in proc.stderr


@pytest.mark.parametrize(
    'option, message',
    [("train_cfg.stages=dict(name='train',iters=2)",
      r"--cfg-options train_cfg\.stages=dict\(name='train',iters=2\): "
      r'mmengine reads numbers, strings, None.*not this value\. Set one key '
      r'at a time \(e\.g\. train_cfg\.stages\.0\.iters=8'),
     ('train_cfg.stages', r'--cfg-options train_cfg\.stages: each option is '
      r'KEY=VALUE'), ('=3', r'--cfg-options =3: each option is KEY=VALUE')])
def test_cfg_options_it_cannot_parse_are_a_usage_error(option, message,
                                                       capsys):
    """mmengine's DictAction recursed until Python stopped it on
    ``dict(...)`` and raised a bare ValueError on an option without ``=``:
    every tool's --cfg-options (CfgOptionsAction) now says what it reads."""
    import argparse

    from mmseg_sign.utils.cli import add_runner_args
    parser = argparse.ArgumentParser(prog='tools/train.py')
    add_runner_args(parser)
    with pytest.raises(SystemExit) as exit_info:
        parser.parse_args(['--cfg-options', option])
    assert exit_info.value.code == 2
    import re
    err = capsys.readouterr().err
    assert re.search(message, err), err
    # what it reads is still parsed as mmengine parses it
    args = parser.parse_args(
        ['--cfg-options', 'a.b=[1,2]', 'c=(x,y)', 'd=None', 'e=0.5'])
    assert args.cfg_options == dict({
        'a.b': [1, 2],
        'c': ('x', 'y'),
        'd': None,
        'e': 0.5
    })
