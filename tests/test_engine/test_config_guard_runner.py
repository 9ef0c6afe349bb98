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
    return ConfigGuardRunner(
        model=_Model(), work_dir=str(work_dir), cfg=cfg, default_scope='mmseg')


def test_the_dump_never_replaces_the_config(tmp_path):
    cfg = tmp_path / 'my_cfg.py'
    text = '# my comment\nvalue = 1\n'
    cfg.write_text(text)
    with pytest.raises(
            ValueError,
            match=f'the work dir {tmp_path} holds the '
            f'config {cfg} itself'):
        _runner(cfg, tmp_path)
    assert cfg.read_text() == text
    # another work dir: mmengine's dump, as ever
    _runner(cfg, tmp_path / 'wd')
    dumped = (tmp_path / 'wd' / 'my_cfg.py').read_text()
    assert 'value = 1' in dumped and 'my comment' not in dumped


def test_the_config_text_is_formatted_once_per_content(tmp_path, monkeypatch):
    """The Runner's config formats its text (yapf, ~0.4 s a call) once
    however often mmengine asks (log, runtime info, dump, every
    checkpoint), the same text as mmengine's, and anew when it changes."""
    import copy
    import os.path as osp

    import mmengine.config.config as mmengine_config
    from e2e_utils import REPO

    from mmseg_sign.engine.runner.config_guard_runner import \
        OnceFormattedConfig
    path = osp.join(REPO, 'configs', 'sign', 'sign_toy.py')
    calls = []
    format_code = mmengine_config.FormatCode

    def counted(*args, **kwargs):
        calls.append(1)
        return format_code(*args, **kwargs)

    monkeypatch.setattr(mmengine_config, 'FormatCode', counted)
    plain = Config.fromfile(path)
    expected = plain.pretty_text  # mmengine's own
    assert len(calls) == 1
    cfg = OnceFormattedConfig.of(plain)
    assert type(cfg) is OnceFormattedConfig and type(plain) is Config
    assert OnceFormattedConfig.of(cfg) is cfg
    assert [cfg.pretty_text for _ in range(4)] == [expected] * 4
    assert len(calls) == 2
    assert copy.deepcopy(cfg).pretty_text == expected  # as a Runner keeps it
    assert len(calls) == 2
    cfg.train_cfg.stages[2]['iters'] = 7  # a change: formatted again
    plain.train_cfg.stages[2]['iters'] = 7
    assert cfg.pretty_text == plain.pretty_text != expected
    assert '_pretty_text' not in cfg.to_dict()  # not a key of the config
    # the Runner's config; its dump is mmengine's text
    cfg.dump(str(tmp_path / 'dumped.py'))
    assert (tmp_path / 'dumped.py').read_text() == plain.pretty_text
    runner = _runner(path, tmp_path / 'wd')
    assert type(runner.cfg) is OnceFormattedConfig
    assert (tmp_path / 'wd' / 'sign_toy.py').read_text() == expected


def test_runs_started_in_the_same_second_keep_their_own_log_folders(
        tmp_path, monkeypatch):
    """Two Runners on one work dir in the same second (mmengine's clock
    held): each gets a log folder of its own (TIMESTAMP, TIMESTAMP_1), so
    neither's metrics json or config replaces the other's."""
    import time

    from mmseg_sign.engine.runner.config_guard_runner import claim_log_dir
    cfg = tmp_path / 'cfg.py'
    cfg.write_text('value = 1\n')
    monkeypatch.setattr(time, 'time', lambda: 1764350000.0)
    first = _runner(cfg, tmp_path / 'wd')
    second = _runner(cfg, tmp_path / 'wd')
    assert first.log_dir != second.log_dir
    assert second.log_dir == first.log_dir + '_1'
    assert first.timestamp + '_1' == second.timestamp
    # by hand: the next free name, and a folder is made for it
    (tmp_path / 'w2').mkdir()
    assert claim_log_dir(str(tmp_path / 'w2'), 'T') == 'T'
    assert claim_log_dir(str(tmp_path / 'w2'), 'T') == 'T_1'
    assert sorted(p.name for p in (tmp_path / 'w2').iterdir()) == ['T', 'T_1']


def test_overwriting_a_run_keeps_its_record_of_the_config(tmp_path):
    """overwrite_checkpoints=True through a Runner alone (mmseg's tools,
    mim: no tools/train.py check before it is built): the replaced run's
    record of the config goes aside with its checkpoints before this run's
    dump is written."""
    import os
    cfg = tmp_path / 'my_cfg.py'
    cfg.write_text('value = 2\noverwrite_checkpoints = True\n')
    wd = tmp_path / 'wd'
    wd.mkdir()
    (wd / 'my_cfg.py').write_text('value = 1\n')  # the old run's record
    (wd / 'iter_4.pth').write_bytes(b'old')
    _runner(cfg, wd)
    assert 'value = 2' in (wd / 'my_cfg.py').read_text()
    aside = [d for d in os.listdir(wd) if d.startswith('replaced_')]
    assert len(aside) == 1
    assert (wd / aside[0] / 'my_cfg.py').read_text() == 'value = 1\n'
    assert (wd / aside[0] / 'iter_4.pth').read_bytes() == b'old'
