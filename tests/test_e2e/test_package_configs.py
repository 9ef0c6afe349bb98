"""Configs inherited by package path: a config anywhere
can start from ``_base_ = ['mmseg_sign::sign/sign_toy.py']``, as with
``mmseg::`` paths; the editable install links the configs under
``mmseg_sign/.mim`` (a wheel copies them)."""
import os.path as osp
import shutil

import pytest
from e2e_utils import REPO, run_tool
from mmengine.config import Config


def _without_scope(obj):
    if isinstance(obj, dict):
        return {k: _without_scope(v) for k, v in obj.items() if k != '_scope_'}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_without_scope(v) for v in obj)
    return obj


def test_package_path_resolves_to_the_shipped_config(tmp_path):
    import mmseg_sign  # noqa: F401  (registers the package path)
    child = tmp_path / 'mine.py'
    child.write_text("_base_ = ['mmseg_sign::sign/sign_voc.py']\n")
    by_package = Config.fromfile(str(child))
    shipped = Config.fromfile(osp.join(REPO, 'configs/sign/sign_voc.py'))
    assert by_package.model.get('_scope_') == 'mmseg_sign'
    assert _without_scope(by_package.to_dict()) == \
        _without_scope(shipped.to_dict())
    missing = tmp_path / 'missing.py'
    missing.write_text("_base_ = ['mmseg_sign::sign/no_such_config.py']\n")
    with pytest.raises(FileNotFoundError, match='no_such_config'):
        Config.fromfile(str(missing))


@pytest.mark.slow
def test_train_from_a_package_config(tmp_path, toy_root):
    """tools/train.py in a directory of the user's, on a config that
    inherits the toy config by package path: every module builds in the
    ``mmseg_sign`` scope (its registries fall through to mmseg's)."""
    shutil.copytree(toy_root, tmp_path / 'data' / 'toy')
    cfg = tmp_path / 'my_sign.py'
    cfg.write_text("_base_ = ['mmseg_sign::sign/sign_toy.py']\n" + """
stages = [dict(name='train', iters=2),
          dict(name='transfer', iters=2, mode='alternate', block_iters=1)]
train_cfg = dict(stages=stages)
default_hooks = dict(logger=dict(interval=1))
""")
    wd = str(tmp_path / 'wd')
    out = run_tool(['train.py', str(cfg), '--work-dir', wd], str(tmp_path))
    assert osp.isfile(osp.join(wd, 'iter_4.pth')), out[-3000:]
    assert 'Failed to search registry' not in out, out[-3000:]
    assert 'hIoU' in out  # the stage-end validation ran
