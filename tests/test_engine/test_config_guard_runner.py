"""ConfigGuardRunner (engine/runner/config_guard_runner.py): mmengine's
Runner, except that its config dump never replaces the config file (the
same cases through mmseg's tools/train.py: tests/test_e2e/
test_output_guard.py::test_a_work_dir_holding_the_config_is_refused)."""
import pytest
from mmengine.config import Config
from mmengine.model import BaseModel

from mmseg_sign.engine.runner import ConfigGuardRunner


class _Model(BaseModel):

    def forward(self, *args, **kwargs):
        return {}


def _runner(cfg_path, work_dir):
    cfg = Config.fromfile(str(cfg_path))
    return ConfigGuardRunner(model=_Model(), work_dir=str(work_dir),
                             cfg=cfg, default_scope='mmseg')


def test_the_dump_never_replaces_the_config(tmp_path):
    cfg = tmp_path / 'my_cfg.py'
    text = '# my comment\nvalue = 1\n'
    cfg.write_text(text)
    with pytest.raises(ValueError, match=f'the work dir {tmp_path} holds the '
                       f'config {cfg} itself'):
        _runner(cfg, tmp_path)
    assert cfg.read_text() == text
    # another work dir: mmengine's dump, as ever
    _runner(cfg, tmp_path / 'wd')
    dumped = (tmp_path / 'wd' / 'my_cfg.py').read_text()
    assert 'value = 1' in dumped and 'my comment' not in dumped
