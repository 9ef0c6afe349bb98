"""tools/toy_table.py: the toy tables' runner (each config's metrics at
each stage end, mean ± 95 % CI over seeds, paired comparisons) and its
comparison picture."""
import json
import os
import os.path as osp
import subprocess
import sys

import pytest
import tool_server
import torch
from e2e_utils import REPO

# every test here starts a tool process or trains a run
pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings('ignore')]

SHORT_PLAN = [
    'train_cfg.stages.0.iters=2', 'train_cfg.stages.1.iters=2',
    'train_cfg.stages.1.block_iters=1', 'train_cfg.stages.2.iters=2'
]


def test_table_is_mean_and_ci_of_the_chosen_runs():
    from mmseg_sign.analysis.toy_markdown import table, table_by_data_seed

    def run(h):
        return dict(
            seconds=10,
            params=dict(sim=1234, model=56789),
            transfer=dict(mIoU_seen=80.0, mIoU_unseen=h / 2, hIoU=h))

    results = {'a/0/0': run(40.0), 'a/0/1': run(60.0), 'a/1/0': run(90.0)}
    lines = table(
        results, {'A': ('a', 'transfer')}, data_seeds=[0], seeds=[0, 1])
    # the run of data seed 1 is not asked for. By hand: 40 and 60 have
    # sd 14.142 (ddof 1); t(0.975, 1 df) = 12.706 (a t table), so the half
    # width is 12.706 · 14.142 / √2 = 127.06; unseen (20, 30): 63.53
    assert lines[2] == ('| A | 2 | 80.00 ± 0.00 | 25.00 ± 63.53 | '
                        '50.00 ± 127.06 | 14.14 | – | 1,234 | 56,789 | 10 |')
    assert table(results, {'B': ('b', 'transfer')}, [0], [0]) == lines[:2]
    # s per run: the runs trained whole in one attempt (not a continued
    # one, nor one that started from another run's stages)
    part = dict(
        results, **{
            'a/0/1':
            dict(run(60.0), seconds=3, started_from='b_seed1/iter_4.pth')
        })
    assert table(part, {'A': ('a', 'transfer')}, [0],
                 [0, 1])[2].endswith('| 10 |')
    part['a/0/0'] = dict(run(40.0), seconds=2, resumed_from='iter_2.pth')
    assert table(part, {'A': ('a', 'transfer')}, [0],
                 [0, 1])[2].endswith('| — |')
    # per data seed: seeds 0, 1 of data seed 0 (40, 60); data seed 1 has
    # seed 0 only (90)
    by_data = table_by_data_seed(results, {'A': ('a', 'transfer')}, [0, 1],
                                 [0, 1])
    assert by_data[2] == '| A | 50.00 ± 127.06 | 90.00 |'
    unseen = table_by_data_seed(results, {'A': ('a', 'transfer')}, [0, 1],
                                [0, 1], 'mIoU_unseen')
    assert unseen[2] == '| A | 25.00 ± 63.53 | 45.00 |'


def test_compare_is_a_paired_difference_with_its_interval():
    from mmseg_sign.analysis.toy_markdown import comparison

    def run(h):
        return dict(self_train=dict(mIoU_seen=80.0, mIoU_unseen=h, hIoU=h))

    a, b = [50.0, 60.0, 70.0], [48.0, 57.0, 69.0]
    results = {
        **{f'a/0/{s}': run(v)
           for s, v in enumerate(a)},
        **{f'b/0/{s}': run(v)
           for s, v in enumerate(b)},
        **{f'c/0/{s}': run(v - 5)
           for s, v in enumerate(a)}, 'b/0/7': run(10.0)
    }  # no partner in A: not paired
    rows = {
        'A': ('a', 'self_train'),
        'B': ('b', 'self_train'),
        'C': ('c', 'self_train')
    }
    lines = comparison(results, rows, [('A', 'B'), ('A', 'C')], [0],
                       [0, 1, 2, 7])
    # A − B: 2, 3, 1 -> mean 2, sd 1, t(0.975, 2 df) = 4.303 -> ± 2.48:
    # the interval holds 0, so the toy cannot order them
    assert '| A − B | harmonic mIoU | 3 | 2.00 ± 2.48 | 3/3 | not resolved ' \
        '|' in lines
    assert '| A − B | seen mIoU | 3 | 0.00 ± 0.00 | 0/3 | not resolved |' \
        in lines
    # A − C: 5 on every pair -> A > C
    assert '| A − C | harmonic mIoU | 3 | 5.00 ± 0.00 | 3/3 | A > C |' in \
        lines
    assert lines[0].endswith('| A wins | the toy says |')
    # runs on a config's own data (CamVid) are not the toy's
    own = comparison(
        results, rows, [('A', 'C')], [0], [0, 1, 2], says='the runs say')
    assert own[0].endswith('| A wins | the runs say |') and own[1:] == [
        lines[1], *lines[-3:]
    ]


def test_runs_pair_only_on_one_cpu_type():
    from mmseg_sign.analysis.toy_markdown import comparison, paired_values

    def run(h, cpu=None):
        out = dict(transfer=dict(mIoU_seen=80.0, mIoU_unseen=h, hIoU=h))
        return dict(out, cpu=cpu) if cpu else out

    results = {
        'a/0/0': run(50.0, 'EPYC'),
        'b/0/0': run(40.0, 'EPYC'),
        'a/0/1': run(60.0, 'Xeon'),
        'b/0/1': run(20.0, 'EPYC'),  # its seed's A ran elsewhere
        'a/0/2': run(70.0),  # kept before runs named their CPU
        'b/0/2': run(66.0, 'Xeon'),
    }
    pairs, a, b = paired_values(results, ('a', 'transfer'), ('b', 'transfer'),
                                [0], [0, 1, 2])
    assert (pairs, a, b) == (['0/0', '0/2'], [50.0, 70.0], [40.0, 66.0])
    rows = {'A': ('a', 'transfer'), 'B': ('b', 'transfer')}
    # 10 and 4: mean 7, sd 4.243, t(0.975, 1) 12.706 -> ± 38.12
    assert '| A − B | harmonic mIoU | 2 | 7.00 ± 38.12 | 2/2 | ' \
        'not resolved |' in comparison(results, rows, [('A', 'B')], [0],
                                       [0, 1, 2])


def test_split_summary_sets_val_and_test_side_by_side():
    """docs/camvid.md's opening table: every row's val and test columns, and
    each pair's harmonic difference on both splits, the test columns over
    the runs scored on the test split only."""
    from mmseg_sign.analysis.toy_markdown import on_test_split, split_summary

    def run(h, test=None):
        out = dict(
            cpu='Xeon', self_train=dict(mIoU_seen=80.0, mIoU_unseen=h, hIoU=h))
        if test is not None:
            out['test'] = dict(
                self_train=dict(
                    mIoU_seen=70.0, mIoU_unseen=test / 2, hIoU=test))
        return out

    results = {
        'a/own/0': run(50.0, 40.0),
        'a/own/1': run(60.0, 44.0),
        'a/own/2': run(70.0),
        'b/own/0': run(48.0, 30.0),
        'b/own/1': run(57.0, 33.0),
        'b/own/2': run(69.0),
    }
    # its test stages in place of the val ones (the rest kept)
    assert on_test_split(results)['a/own/1'] == dict(
        results['a/own/1'], **results['a/own/1']['test'])
    assert 'a/own/2' not in on_test_split(results)
    rows = {
        'A': ('a', 'self_train'),
        'B': ('b', 'self_train'),
        'C': ('c', 'self_train')
    }
    lines = split_summary(results, rows, [('A', 'B'), ('A', 'C')], ['own'],
                          [0, 1, 2])
    # by hand. A on val: 50, 60, 70 -> sd 10, t(0.975, 2) = 4.303: ± 24.84;
    # on test (seeds 0, 1): 40, 44 -> sd 2.828, t(0.975, 1) = 12.706:
    # ± 25.41, unseen 20, 22 -> ± 12.71. B on val: 48, 57, 69 -> sd 10.536:
    # ± 26.17; on test 30, 33 -> ± 19.06, unseen 15, 16.5 -> ± 9.53. C has
    # no run: no line
    assert lines[2:5] == [
        '| A | 3 | 60.00 ± 24.84 | 60.00 ± 24.84 | 2 | 21.00 ± 12.71 | '
        '42.00 ± 25.41 |', '| B | 3 | 58.00 ± 26.17 | 58.00 ± 26.17 | 2 | '
        '15.75 ± 9.53 | 31.50 ± 19.06 |', ''
    ]
    # A − B: val 2, 3, 1 -> 2.00 ± 2.48 (holds 0); test 10, 11 -> sd 0.707:
    # ± 6.35 (excludes 0). A − C has no pair on either split: no line
    assert lines[7:] == [
        '| A − B | 3 | 2.00 ± 2.48 | 3/3 | 2 | 10.50 ± 6.35 | 2/2 | '
        'not resolved; A > B |'
    ]


def test_a_run_records_the_cpu_types_it_trained_on(tmp_path):
    from mmseg_sign.analysis.run_records import (cpu_type, machines_of,
                                                 record_machine)
    here = cpu_type()
    assert here and '\n' not in here
    own, sibling = str(tmp_path / 'own'), str(tmp_path / 'sibling')
    assert machines_of(own) == []
    # stages trained before the record: of an unknown CPU type
    record_machine(own, sibling=str(tmp_path / 'unrecorded'))
    assert machines_of(own) == ['unknown', here]
    record_machine(sibling, fresh=True)
    with open(osp.join(sibling, 'machines.txt'), 'a') as f:
        f.write('Other CPU\n')  # an attempt continued elsewhere
    record_machine(own, fresh=True)
    record_machine(own)  # continued here
    assert machines_of(own) == [here, here]
    record_machine(own, sibling=sibling)  # started from the sibling's stages
    assert machines_of(own) == [here, 'Other CPU', here]
    record_machine(own, fresh=True)  # trained anew
    assert machines_of(own) == [here]
    # a table about to train a seed whose stored runs ran elsewhere says so
    from mmseg_sign.analysis.run_records import other_cpu_types
    stored = {
        'a/own/5': dict(cpu='Other CPU'),
        'b/own/5': dict(cpu=here),
        'a/own/6': dict(cpu=here),
        'a/own/7': {}
    }
    todo = [('c.py', None, [], 'own', s) for s in (5, 6, 7, 8)]
    assert other_cpu_types(todo, stored) == [
        f'seed 5 (data own) has stored runs trained on Other CPU; this '
        f'machine is {here}: its runs of that seed will not pair with them '
        "(train a seed's rows on one CPU type)"
    ]


def test_param_counts_split_the_sim_from_the_inference_model(tmp_path):
    import torch

    from mmseg_sign.analysis.run_records import param_counts
    sizes = {
        'backbone.conv.weight': 10,
        'neck.input_proj.conv.weight': 5,
        'neck.encoder.proj.weight': 3,
        'neck.reparam.mu.weight': 4,
        'decode_head.generator.fc.weight': 7,
        'decode_head.discriminator.fc.weight': 6,
        'decode_head.class_embedding': 8,
        'decode_head.conv_seg.weight': 2
    }
    state = {k: torch.zeros(n) for k, n in sizes.items()}
    state['backbone.bn.num_batches_tracked'] = torch.zeros(9).long()
    torch.save(dict(state_dict=state), tmp_path / 'iter_1.pth')
    (tmp_path / 'last_checkpoint').write_text(str(tmp_path / 'iter_1.pth'))
    # SIM: encoder + latent head (3 + 4); model: + backbone, ASPP and C
    # (10 + 5 + 2); not G, D, the embedding table or integer buffers
    assert param_counts(str(tmp_path)) == dict(sim=7, model=24)


def test_runner_records_every_stage_and_draws(tmp_path):
    wd = tmp_path / 'table'
    cmd = [
        sys.executable,
        osp.join(REPO, 'tools', 'toy_table.py'),
        osp.join(REPO, 'configs', 'sign', 'sign_toy.py'), '--seeds', '0',
        '--data-seeds', '5', '--work-dir',
        str(wd), '--rows', 'SIGN=sign_toy+short@transfer',
        'SIGN + AST=sign_toy+short@self_train', '--picture',
        str(tmp_path / 'cmp.png'), '--tag', 'short', '--cfg-options',
        *SHORT_PLAN
    ]
    env = dict(os.environ, PYTHONWARNINGS='ignore', OMP_NUM_THREADS='1')
    out = tool_server.run(
        cmd, capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    results = json.loads((wd / 'results.json').read_text())
    run = results['sign_toy+short/5/0']
    assert set(run) == {
        'seconds', 'params', 'key', 'cpu', 'train', 'transfer', 'self_train'
    }
    from mmseg_sign.analysis.run_records import cpu_type
    assert run['cpu'] == cpu_type()  # one attempt, on this machine
    from mmseg_sign.analysis.toy_results import run_key
    assert run['key'] == run_key(  # what it ran: the config + options
        osp.join(REPO, 'configs', 'sign', 'sign_toy.py'), None, SHORT_PLAN)
    assert run['key'] != run_key(
        osp.join(REPO, 'configs', 'sign', 'sign_toy.py'))
    assert 0 < run['params']['sim'] < run['params']['model']
    assert '| SIGN + AST | 1 |' in out.stdout
    assert out.stdout.index('| SIGN |') < out.stdout.index('| SIGN + AST |')
    assert (tmp_path / 'cmp.png').stat().st_size > 0
    # the same command again reuses the run (no training); the picture
    # exists, so it is redrawn only with --force
    refused = tool_server.run(
        cmd, capture_output=True, text=True, env=env, timeout=600)
    assert refused.returncode == 2 and 'cmp.png exists' in refused.stderr
    cmd.append('--force')
    again = tool_server.run(
        cmd, capture_output=True, text=True, env=env, timeout=600)
    assert again.returncode == 0 and \
        'sign_toy+short/5/0 {' not in again.stdout
    assert json.loads((wd / 'results.json').read_text()) == results
    # --report-only trains nothing: a seed with no stored run is left out
    # of its rows (the runs column says 1)
    report = tool_server.run([*cmd[:4], '0', '1', *cmd[5:], '--report-only'],
                             capture_output=True,
                             text=True,
                             env=env,
                             timeout=600)
    assert report.returncode == 0, report.stderr[-3000:]
    assert '| SIGN + AST | 1 |' in report.stdout
    assert not (wd / 'sign_toy+short_data5_seed1').exists()
    assert json.loads((wd / 'results.json').read_text()) == results
    # with the tag but without the --cfg-options it is another run:
    # refused, not passed off as the tagged one
    other = tool_server.run([*cmd[:-len(SHORT_PLAN) - 2], '--force'],
                            capture_output=True,
                            text=True,
                            env=env,
                            timeout=600)
    assert other.returncode == 2 and 'ran another config or other ' \
        '--cfg-options: sign_toy+short/5/0' in other.stderr
    assert json.loads((wd / 'results.json').read_text()) == results


def test_seed_key_varies_one_source_and_compare_pairs_the_runs(tmp_path):
    """The spread decomposition's runs (tools/analysis/toy_spread.sh): with
    --seed-key each run's seed goes to that key (here the initial weights'
    own seed) and the run seed stays as given; --compare prints the paired
    difference of two rows over the same seeds."""
    from mmengine.config import Config
    wd = tmp_path / 'table'
    key = 'default_hooks.sign_random.init_seed'
    cmd = [
        sys.executable,
        osp.join(REPO, 'tools', 'toy_table.py'),
        osp.join(REPO, 'configs', 'sign', 'sign_toy.py'), '--seeds', '0-1',
        '--data-seeds', '5', '--work-dir',
        str(wd), '--jobs', '2', '--tag', 'init', '--seed-key', key,
        '--cfg-options', 'randomness.seed=0', *SHORT_PLAN
    ]
    env = dict(os.environ, PYTHONWARNINGS='ignore', OMP_NUM_THREADS='1')
    out = tool_server.run(
        cmd, capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    states = []
    for seed in (0, 1):
        run_dir = wd / f'sign_toy+init_data5_seed{seed}'
        dumped = Config.fromfile(str(run_dir / 'sign_toy.py'))
        assert dumped.randomness.seed == 0
        assert dumped.default_hooks.sign_random.init_seed == seed
        log = next(run_dir.glob('*/*.log')).read_text()
        assert f'initial weights drawn from init_seed={seed}' in log
        last = (run_dir / 'last_checkpoint').read_text().strip()
        states.append(torch.load(last, map_location='cpu')['state_dict'])
    stem = 'backbone.stem.0.weight'
    assert not torch.equal(states[0][stem], states[1][stem])
    results = json.loads((wd / 'results.json').read_text())
    report = tool_server.run([
        *cmd, '--report-only', '--rows', 'T=sign_toy+init@transfer',
        'AST=sign_toy+init@self_train', '--compare', 'AST', 'T'
    ],
                             capture_output=True,
                             text=True,
                             env=env,
                             timeout=600)
    assert report.returncode == 0, report.stderr[-3000:]
    diffs = [
        results[f'sign_toy+init/5/{s}']['self_train']['hIoU'] -
        results[f'sign_toy+init/5/{s}']['transfer']['hIoU'] for s in (0, 1)
    ]
    line = next(x for x in report.stdout.splitlines()
                if x.startswith('| AST − T | harmonic mIoU |'))
    assert f'| 2 | {sum(diffs) / 2:.2f} ± ' in line, line
    assert json.loads((wd / 'results.json').read_text()) == results


def test_sweep_points_tag_every_value():
    from mmseg_sign.analysis.toy_configs import config_value, sweep_points
    cfg = osp.join(REPO, 'configs', 'sign', 'sign_toy.py')
    key = 'train_cfg.stages.2.temperature'
    assert config_value(cfg, key) == 0.2
    assert config_value(cfg, 'train_cfg.stages.7.temperature') is None
    assert sweep_points(f'{key}=0.2,5') == [
        (0.2, 'temperature0.2', [f'{key}=0.2']),
        (5.0, 'temperature5', [f'{key}=5'])
    ]
    with pytest.raises(ValueError, match='KEY=V1,V2'):
        sweep_points(key)
    with pytest.raises(ValueError, match="'high' is not a number"):
        sweep_points(f'{key}=1,high')


def test_sweep_trains_each_value_from_one_shared_start_and_plots(tmp_path):
    from mmengine.config import Config
    wd = tmp_path / 'sweep'
    key = 'train_cfg.stages.2.temperature'
    cmd = [
        sys.executable,
        osp.join(REPO, 'tools', 'toy_table.py'),
        osp.join(REPO, 'configs', 'sign', 'sign_toy.py'), '--seeds', '0',
        '--data-seeds', '5', '--work-dir',
        str(wd), '--jobs', '2', '--sweep', f'{key}=0.2,5', '--plot',
        str(tmp_path / 'curve.png'), '--checkpoint-interval', '2',
        '--cfg-options', *SHORT_PLAN
    ]
    env = dict(os.environ, PYTHONWARNINGS='ignore')
    env.pop('OMP_NUM_THREADS', None)  # --jobs sets it for each run
    out = tool_server.run(
        cmd, capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    results = json.loads((wd / 'results.json').read_text())
    assert set(results) == {
        'sign_toy+temperature0.2/5/0', 'sign_toy+temperature5/5/0'
    }
    # each run was trained with its value (the config each run dumped)
    for stem, value in (('sign_toy+temperature0.2', 0.2),
                        ('sign_toy+temperature5', 5)):
        dumped = Config.fromfile(wd / f'{stem}_data5_seed0' / 'sign_toy.py')
        assert dumped.train_cfg.stages[2].temperature == value
    assert '| sign_toy@self_train temperature=0.2 | 1 |' in out.stdout
    assert '| sign_toy@self_train temperature=5 | 1 |' in out.stdout
    assert (tmp_path / 'curve.png').stat().st_size > 0
    # the two values share train and transfer: the second run started from
    # the first's checkpoint at the transfer's end (start_siblings: it
    # waited for it rather than training them again beside it)
    assert results['sign_toy+temperature5/5/0']['started_from'] == \
        'sign_toy+temperature0.2_data5_seed0/iter_4.pth'
    assert 'started_from' not in results['sign_toy+temperature0.2/5/0']


def _running(pid):
    """Whether process ``pid`` exists and is not a zombie."""
    try:
        with open(f'/proc/{pid}/status') as f:
            return 'State:\tZ' not in f.read()
    except OSError:
        return False


def _train_children(work_dir):
    """Pids of the tools/train.py processes training into ``work_dir``."""
    found = []
    for entry in os.listdir('/proc'):
        if entry.isdigit():
            try:
                with open(f'/proc/{entry}/cmdline', 'rb') as f:
                    argv = f.read().split(b'\0')
            except OSError:
                continue
            if any(a.endswith(b'tools/train.py') for a in argv) and any(
                    str(work_dir).encode() in a for a in argv):
                found.append(int(entry))
    return found


@pytest.mark.skipif(
    not sys.platform.startswith('linux'),
    reason='PR_SET_PDEATHSIG is Linux-only')
def test_killed_table_leaves_no_run_training(tmp_path):
    """`kill -9` of tools/toy_table.py stops its runs too (they
    trained on as orphans)."""
    import signal
    import time
    wd = tmp_path / 'table'
    cmd = [
        sys.executable,
        osp.join(REPO, 'tools', 'toy_table.py'),
        osp.join(REPO, 'configs', 'sign', 'sign_toy.py'), '--seeds', '0',
        '--data-seeds', '5', '--work-dir',
        str(wd)
    ]
    env = dict(os.environ, PYTHONWARNINGS='ignore', OMP_NUM_THREADS='1')
    table = subprocess.Popen(
        cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    children = []
    while not children and time.time() < deadline:
        time.sleep(0.5)
        children = _train_children(wd)
    assert children, 'no training run started'
    time.sleep(2)  # the run is under way
    os.kill(table.pid, signal.SIGKILL)
    table.wait()
    deadline = time.time() + 30
    while any(map(_running, children)) and time.time() < deadline:
        time.sleep(0.5)
    alive = [p for p in children if _running(p)]
    for pid in alive:  # do not leave it to the rest of the suite
        os.kill(pid, signal.SIGKILL)
    assert not alive, 'the run trained on after the table was killed'


def test_a_run_that_ended_badly_is_not_lost(tmp_path, monkeypatch):
    """results.json cannot be written when a run ends (a size
    limit's `[Errno 27] File too large`, a full disk): the run's result is
    kept beside it, the failure names both files, and the next command
    stores it without retraining. Then the same run as if its command was
    killed in self-training (a session's end): the next command continues
    it from its last checkpoint and ends with the uninterrupted run's
    metrics; one stopped after its last checkpoint is stored without
    training; a run dir that ran anything else is not continued."""
    from mmseg_sign.analysis import toy_table as tt
    from mmseg_sign.analysis.run_records import config_as_run
    from mmseg_sign.analysis.run_starts import unfinished_checkpoint
    from mmseg_sign.analysis.toy_results import RUN_RESULT, adopt_finished_runs
    wd = tmp_path / 'table'
    wd.mkdir()
    cfg = osp.join(REPO, 'configs', 'sign', 'sign_toy.py')
    # every iteration logged; a checkpoint at every stage's end (not
    # part of the run's key)
    plan = [*SHORT_PLAN, 'default_hooks.logger.interval=1']

    def too_large(path, name, run):
        raise OSError(27, 'File too large')

    monkeypatch.setattr(tt, 'record_run', too_large)
    monkeypatch.setenv('OMP_NUM_THREADS', '1')
    results = {}
    failed = tt.train_runs([(cfg, 'short', plan, 5, 0)],
                           str(wd),
                           results,
                           checkpoint_interval=2)
    run_dir = wd / 'sign_toy+short_data5_seed0'
    kept = run_dir / RUN_RESULT
    assert len(failed) == 1 and 'trained, but not stored in' in failed[0]
    assert 'File too large' in failed[0] and str(kept) in failed[0]
    assert results == {} and not (wd / 'results.json').exists()
    monkeypatch.undo()
    monkeypatch.setenv('OMP_NUM_THREADS', '1')
    # the next command: adopted, with its key, nothing trained
    results = {}
    assert adopt_finished_runs(str(wd), results) == ['sign_toy+short/5/0']
    stored = json.loads((wd / 'results.json').read_text())
    assert set(stored) == {'sign_toy+short/5/0'}
    whole = stored['sign_toy+short/5/0']
    from mmseg_sign.analysis.toy_results import run_key
    assert whole['key'] == run_key(cfg, None, plan)
    assert set(whole) >= {'train', 'transfer', 'self_train', 'seconds'}
    # once stored, it is not adopted again; a damaged file is skipped
    assert adopt_finished_runs(str(wd), results) == []
    other = wd / 'other_data5_seed0'
    other.mkdir()
    (other / RUN_RESULT).write_text('{"name": "other/5/0", "ru')
    assert adopt_finished_runs(str(wd), results) == []
    # killed in self-training: no result, the last checkpoint the
    # transfer's end (iteration 4 of 6)
    (wd / 'results.json').unlink()
    kept.unlink()
    (run_dir / 'iter_6.pth').unlink()
    (run_dir / 'last_checkpoint').write_text(str(run_dir / 'iter_4.pth'))
    options = [
        *plan, 'randomness.seed=0',
        f'model.decode_head.class_embeddings={wd}/data5/'
        'class_embeddings.npz',
        *(f'{loader}.dataset.data_root={wd}/data5'
          for loader in ('train_dataloader', 'val_dataloader',
                         'test_dataloader'))
    ]
    for interval in ([], ['default_hooks.checkpoint.interval=3']):
        assert unfinished_checkpoint(cfg, str(run_dir),
                                     [*options, *interval]) == str(
                                         run_dir / 'iter_4.pth')
    # another seed, another option, another config: not this run
    assert unfinished_checkpoint(
        cfg, str(run_dir),
        [*options[:-4], 'randomness.seed=1', *options[-3:]]) is None
    assert unfinished_checkpoint(
        cfg, str(run_dir), [*options, 'train_cfg.stages.2.iters=3']) is None
    assert unfinished_checkpoint(
        osp.join(REPO, 'configs', 'sign', 'sign_toy_st.py'), str(run_dir),
        options) is None
    again = {}  # with another checkpoint interval
    assert tt.train_runs([(cfg, 'short', plan, 5, 0)],
                         str(wd),
                         again,
                         checkpoint_interval=3) == []
    resumed = again['sign_toy+short/5/0']
    assert resumed['resumed_from'] == 'iter_4.pth'
    assert 'resumed_from' not in whole
    for stage in ('train', 'transfer', 'self_train'):
        assert resumed[stage] == whole[stage], stage
    # the second attempt trained iterations 5-6 only
    logs = sorted(run_dir.glob('*/vis_data/scalars.json'))
    assert len(logs) == 2
    steps = [
        json.loads(line)['step'] for line in logs[1].read_text().splitlines()
        if 'loss' in json.loads(line)
    ]
    assert steps and min(steps) > 4, steps
    # stopped after its last checkpoint, before it was stored (in its
    # test-split scoring): listed as such, then stored without training
    # (tools/train.py --resume would refuse: nothing left to train)
    (wd / 'results.json').unlink()
    (run_dir / RUN_RESULT).unlink()
    assert (run_dir /
            'last_checkpoint').read_text().strip().endswith('iter_6.pth')
    assert tt.planned_starts([(cfg, 'short', plan, 5, 0)], str(wd)) == [
        'sign_toy+short/5/0: trained to its end (iter_6.pth): only scored '
        'on the test split and stored'
    ]
    ended = {}
    assert tt.train_runs([(cfg, 'short', plan, 5, 0)], str(wd), ended) == []
    ended = ended['sign_toy+short/5/0']
    assert ended['resumed_from'] == 'iter_6.pth' and ended['seconds'] == 0
    for stage in ('train', 'transfer', 'self_train'):
        assert ended[stage] == whole[stage], stage
    assert len(sorted(run_dir.glob('*/vis_data/scalars.json'))) == 2
    # the config as run is the last attempt's record (vis_data), not the
    # work dir's dump, which the Runner keeps when it differs
    assert config_as_run(str(run_dir), cfg) == max(
        (str(p) for p in run_dir.glob('*/vis_data/config.py')),
        key=osp.getmtime)
    # a copied run dir continues from its own copy, never the original's
    import shutil
    (run_dir / 'last_checkpoint').write_text(str(run_dir / 'iter_4.pth'))
    copy = wd / 'copied_data5_seed0'
    shutil.copytree(run_dir, copy)
    assert unfinished_checkpoint(cfg, str(copy),
                                 options) == str(copy / 'iter_4.pth')
    # a last checkpoint cut short: the last whole one before it, said
    whole4 = (copy / 'iter_4.pth').read_bytes()
    (copy / 'iter_4.pth').write_bytes(whole4[:len(whole4) // 2])
    assert unfinished_checkpoint(cfg, str(copy),
                                 options) == str(copy / 'iter_2.pth')
    (copy / 'iter_2.pth').write_bytes(b'')
    assert unfinished_checkpoint(cfg, str(copy), options) is None
    # without a checkpoint to continue, a run trains from scratch
    (run_dir / 'last_checkpoint').unlink()
    assert unfinished_checkpoint(cfg, str(run_dir), options) is None


def test_a_run_starts_from_the_stages_another_run_ran_alike(
        tmp_path, monkeypatch):
    """SIGN + ST trains train and transfer as SIGN + AST does (same seed,
    data, options): in one table it starts from the AST run's checkpoint
    at the transfer's end, trains self-training only, and ends with the
    metrics of the same run trained from scratch in another table. Another
    seed, or a plan that differs before self-training, is not shared.

    Its config has a ``test_split`` (CamVid's test photographs; here the
    validation images), which is not part of what a run computes: the run
    is scored on it from the stage-end checkpoints as it ends (the shared
    stages from the sibling's), and, for a stored run without the scores,
    by --score-test. Pointed at the validation images, the scores equal
    the validation metrics the run logged at each stage end."""
    from mmengine.config import Config

    from mmseg_sign.analysis import toy_table as tt
    from mmseg_sign.analysis.run_starts import (shared_start,
                                                unfinished_checkpoint)
    from mmseg_sign.analysis.toy_results import parse_cfg_options
    monkeypatch.setenv('OMP_NUM_THREADS', '1')
    ast = osp.join(REPO, 'configs', 'sign', 'sign_toy.py')
    st = osp.join(REPO, 'configs', 'sign', 'sign_toy_st.py')
    split = str(tmp_path / 'sign_toy_st_split.py')
    with open(split, 'w') as f:
        f.write(f'_base_ = [{st!r}]\ntest_split = dict('
                "ann_file='ImageSets/Segmentation/val.txt')\n")
    # long enough for each stage to move the model
    plan = [
        'train_cfg.stages.0.iters=20', 'train_cfg.stages.1.iters=10',
        'train_cfg.stages.1.block_iters=5', 'train_cfg.stages.2.iters=10',
        'default_hooks.logger.interval=1'
    ]
    shared, alone = tmp_path / 'shared', tmp_path / 'alone'
    shared.mkdir()
    alone.mkdir()
    results = {}
    assert tt.train_runs([(ast, 'short', plan, 5, 0)],
                         str(shared),
                         results,
                         checkpoint_interval=10) == []
    options = [
        *plan, 'randomness.seed=0', 'model.decode_head.'
        f'class_embeddings={shared}/data5/class_embeddings.npz',
        *(f'{loader}.dataset.data_root={shared}/data5'
          for loader in ('train_dataloader', 'val_dataloader',
                         'test_dataloader'))
    ]
    # an earlier attempt at the ST run, killed at iteration 10 (the AST
    # run's checkpoint there is the same state): the shared start at 30
    # is further, and the attempt's checkpoint is set aside, not lost
    run_dir = shared / 'sign_toy_st_split+short_data5_seed0'
    run_dir.mkdir()
    attempt = (shared / 'sign_toy+short_data5_seed0' /
               'iter_10.pth').read_bytes()
    (run_dir / 'iter_10.pth').write_bytes(attempt)
    (run_dir / 'last_checkpoint').write_text(str(run_dir / 'iter_10.pth'))
    ran = Config.fromfile(split)
    ran.merge_from_dict(parse_cfg_options(options))
    ran.dump(str(run_dir / 'sign_toy_st_split.py'))
    assert unfinished_checkpoint(split, str(run_dir),
                                 options) == str(run_dir / 'iter_10.pth')
    # what --dry-run says of it
    assert tt.planned_starts([(split, 'short', plan, 5, 0)], str(shared)) \
        == ['sign_toy_st_split+short/5/0: from sign_toy+short_data5_seed0/'
            'iter_30.pth (the stages they run alike)']
    assert tt.train_runs([(split, 'short', plan, 5, 0)], str(shared),
                         results) == []
    # from scratch, without the test split
    assert tt.train_runs([(st, 'short', plan, 5, 0)], str(alone), {}) == []
    name = 'sign_toy_st_split+short/5/0'
    started = json.loads((shared / 'results.json').read_text())[name]
    scratch = json.loads(
        (alone / 'results.json').read_text())['sign_toy_st+short/5/0']
    assert started['started_from'] == \
        'sign_toy+short_data5_seed0/iter_30.pth'
    assert 'started_from' not in scratch
    for stage in ('train', 'transfer', 'self_train'):
        assert started[stage] == scratch[stage], stage
    donor = results['sign_toy+short/5/0']
    assert started['transfer'] == donor['transfer']
    # the ST run's own last stage: its model moved after the transfer
    assert started['self_train'] != started['transfer']
    # it trained self-training only; the older file went aside
    steps = [
        json.loads(line)['step']
        for log in run_dir.glob('*/vis_data/scalars.json')
        for line in log.read_text().splitlines() if 'loss' in json.loads(line)
    ]
    assert steps and min(steps) == 31, steps
    assert [p.read_bytes() for p in run_dir.glob('replaced_*/iter_10.pth')] \
        == [attempt]
    # the test split: scored at every stage end (train and transfer on the
    # sibling's checkpoints), equal to the validation there; a config
    # without a test split has none
    keys = ('mIoU_seen', 'mIoU_unseen', 'hIoU', 'mIoU')
    assert 'test' not in donor and 'test' not in scratch
    assert set(started['test']) == {'train', 'transfer', 'self_train'}
    for stage in started['test']:
        assert {k: started['test'][stage][k] for k in keys} == \
            {k: started[stage][k] for k in keys}, stage
    # what is compared: seed, data and the plan up to the shared stages
    other = str(shared / 'new_run')
    assert shared_start(st, other, options)[1:] == (str(
        shared / 'sign_toy+short_data5_seed0'), 30)
    assert shared_start(st, other, [*options, 'randomness.seed=1']) \
        is None
    # a longer transfer: only the train stage is shared (iteration 20)
    assert shared_start(st, other,
                        [*options, 'train_cfg.stages.1.iters=12'])[2] == 20
    assert shared_start(st, other,
                        [*options, 'train_cfg.stages.0.iters=30']) is None
    # the sibling's checkpoint at the transfer's end cut short: the start
    # is the train stage's end (its whole checkpoint), not a traceback
    cut = shared / 'sign_toy+short_data5_seed0' / 'iter_30.pth'
    cut.write_bytes(cut.read_bytes()[:1000])
    assert shared_start(st, other, options)[2] == 20
    # --score-test: a stored run without test scores is scored from the
    # checkpoints still there (the transfer's is now damaged: left out)
    stored = json.loads((shared / 'results.json').read_text())
    del stored[name]['test']
    (shared / 'results.json').write_text(json.dumps(stored))
    again = json.loads((shared / 'results.json').read_text())
    assert tt.score_stored_runs([(split, 'short', plan, 5, 0)], str(shared),
                                again) == [name]
    assert again[name]['test'] == {
        stage: started['test'][stage]
        for stage in ('train', 'self_train')
    }
    # the split is what is scored: the training images give other numbers
    on_train = str(tmp_path / 'sign_toy_st_train.py')
    with open(on_train, 'w') as f:
        f.write(f'_base_ = [{split!r}]\ntest_split = dict(ann_file='
                "'ImageSets/Segmentation/train.txt')\n")
    scores = tt.score_test_split(on_train, str(run_dir), str(shared / 'data5'),
                                 plan)
    # (without the shared start: its own last checkpoint only)
    assert set(scores) == {'self_train'}
    assert scores['self_train'] != started['test']['self_train']
    assert tt.score_test_split(ast, str(shared / 'sign_toy+short_data5_seed0'),
                               str(shared / 'data5'), plan) == {}


def test_toy_data_of_another_seed_is_not_reused(tmp_path):
    """A ``data0/`` made with another seed (or test size) was
    taken as data seed 0 and its runs stored as seed 0's. Refused from the
    set's record; a set made before the record by its first test image,
    then recorded."""
    from mmseg_sign.analysis.toy_data import TOY_DATA_RECORD, make_toy_dataset
    from mmseg_sign.analysis.toy_table import TOY_VAL_SIZE, toy_data
    data0 = tmp_path / 'data0'
    make_toy_dataset(
        str(data0), num_train=10, num_val=10, val_size=TOY_VAL_SIZE, seed=1)
    record = data0 / TOY_DATA_RECORD
    assert json.loads(record.read_text())['seed'] == 1
    # through the tool: refused before anything trains
    proc = tool_server.run([
        sys.executable,
        osp.join(REPO, 'tools', 'toy_table.py'),
        osp.join(REPO, 'configs', 'sign', 'sign_toy.py'), '--seeds', '0',
        '--work-dir',
        str(tmp_path)
    ],
                           capture_output=True,
                           text=True,
                           timeout=300,
                           env=dict(os.environ, PYTHONWARNINGS='ignore'))
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "data0 holds toy data made with {'seed': 1" in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ['data0']
    with pytest.raises(
            ValueError,
            match=(r"data0 holds toy data made with \{'seed': 1, 'val_size': "
                   r"\[96, 96\]\}.*not \{'seed': 0.*another --work-dir")):
        toy_data(str(tmp_path), 0)
    record.unlink()  # as made before the record existed
    with pytest.raises(
            ValueError,
            match=("data0 holds toy data that is not {'seed': 0, 'val_size': "
                   r"\[96, 96\]}: its first test image")):
        toy_data(str(tmp_path), 0)
    (tmp_path / 'data1').symlink_to(data0)  # the seed it was made with
    assert toy_data(str(tmp_path), 1) == str(tmp_path / 'data1')
    assert json.loads(record.read_text()) == dict(seed=1, val_size=[96, 96])
    make_toy_dataset(
        str(tmp_path / 'small'), num_train=10, num_val=10,
        seed=1)  # the default 64 x 64 test images
    (tmp_path / 'small' / TOY_DATA_RECORD).unlink()
    (tmp_path / 'data1').unlink()
    (tmp_path / 'data1').symlink_to(tmp_path / 'small')
    with pytest.raises(ValueError, match='its first test image'):
        toy_data(str(tmp_path), 1)


def test_a_supervised_config_runs_on_the_toy_data(tmp_path):
    """toy_table gave every config the toy class-embedding table,
    so mmseg's FCN (no zero-shot head) failed in its head's constructor
    with a raw TypeError. A head without a table gets none."""
    proc = tool_server.run([
        sys.executable,
        osp.join(REPO, 'tools', 'toy_table.py'),
        osp.join(REPO, 'configs', 'baselines',
                 'fcn_r18-tiny_toy.py'), '--seeds', '0', '--work-dir',
        str(tmp_path), '--tag', 'short', '--cfg-options',
        'train_cfg.max_iters=2', 'train_cfg.val_interval=2',
        'val_evaluator.per_class=True'
    ],
                           capture_output=True,
                           text=True,
                           timeout=600,
                           env=dict(
                               os.environ,
                               PYTHONWARNINGS='ignore',
                               OMP_NUM_THREADS='1'))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert '| fcn_r18-tiny_toy+short@end | 1 |' in proc.stdout
    stored = json.loads((tmp_path / 'results.json').read_text())
    end = stored['fcn_r18-tiny_toy+short/0/0']['end']
    assert set(end) >= {'mIoU_seen', 'mIoU_unseen', 'hIoU', 'mIoU'}
    # GZSLIoUMetric(per_class=True): each class's IoU is kept with the run
    from mmseg_sign.datasets.class_names import TOY_CLASSES
    assert {f'IoU.{name}' for name in TOY_CLASSES} <= set(end)


def test_sweep_key_of_a_stage_option_left_at_its_default():
    """``--sweep train_cfg.stages.1.synth_weight=...`` names
    a real option that the shipped plan leaves at its default; it was
    refused as a misspelled key. Its value is the default; a misspelt
    option or a stage the plan lacks is still None."""
    from mmseg_sign.analysis.toy_configs import config_value, read_config
    from mmseg_sign.structures.stage_plan import STAGE_OPTIONS
    toy = osp.join(REPO, 'configs', 'sign', 'sign_toy.py')
    assert config_value(toy, 'train_cfg.stages.1.synth_weight') == \
        STAGE_OPTIONS['transfer']['synth_weight'] == 0.125
    assert config_value(toy, 'train_cfg.stages.2.temperature') == 0.2  # set
    assert config_value(toy, 'train_cfg.stages.1.synth_weigt') is None
    assert config_value(toy, 'train_cfg.stages.7.synth_weight') is None
    assert config_value(toy, 'model.decode_head.synth_weight') is None
    # a model module's argument the config leaves at its default: the
    # registered class's (SIGNHead's alpha of eq. 4); one without a default
    # or another module's is absent
    assert 'loss_kld_weight' not in read_config(toy).model.decode_head
    assert config_value(toy, 'model.decode_head.loss_kld_weight') == 100.0
    assert config_value(toy, 'model.decode_head.loss_kld_weigth') is None
    assert config_value(toy, 'model.neck.loss_kld_weight') is None


def test_each_run_waits_only_for_the_run_it_starts_from():
    """The CamVid campaign's configs in its order: SIGN + ST starts from
    SIGN (+ AST), ZS3 + AST from ZS3 + ST, CaGNet + AST from CaGNet + ST
    (their first two stages alike), each only from an earlier run of its
    own seeds; the ablations and SPNet from none."""
    from mmseg_sign.analysis.run_starts import start_siblings
    names = [
        'sign/sign_lite0_camvid-480x360.py',
        'sign/ablations/sign_lite0_camvid-480x360_no-sim.py',
        'baselines/zs3net_lite0_camvid-480x360_st.py',
        'baselines/spnet_lite0_camvid-480x360.py',
        'sign/sign_lite0_camvid-480x360_st.py',
        'baselines/zs3net_lite0_camvid-480x360_ast.py',
        'baselines/cagnet_lite0_camvid-480x360_st.py',
        'baselines/cagnet_lite0_camvid-480x360_ast.py',
    ]
    todo = [(osp.join(REPO, 'configs', n), None, [], 'own', 0) for n in names]
    expected = {4: 0, 5: 2, 7: 6}
    # the campaign's checkpoints every 400 iterations: one at 1600, the
    # transfer's end (the configs' own every 1200: the train stage's end);
    # none where no checkpoint is kept at a shared end
    assert start_siblings(todo, 700) == {}
    assert start_siblings(todo) == start_siblings(todo, 400) == expected
    # another seed is another start: each run starts from its own seed's
    # run, whichever seed comes first
    other = [(*t[:4], 1) for t in todo]
    n = len(names)
    assert start_siblings(other + todo, 400) == {
        **expected,
        **{i + n: j + n
           for i, j in expected.items()}
    }


def test_dry_run_lists_the_runs_and_where_each_would_start(tmp_path):
    """--dry-run: the runs the command would train, in its order, each
    with where it would start; nothing is made (no work dir, no toy
    data), nothing trains."""
    wd = tmp_path / 'wd'
    cmd = [
        sys.executable,
        osp.join(REPO, 'tools', 'toy_table.py'),
        osp.join(REPO, 'configs', 'sign', 'sign_toy.py'),
        osp.join(REPO, 'configs', 'sign', 'sign_toy_st.py'), '--seeds', '0-1',
        '--jobs', '2', '--work-dir',
        str(wd), '--dry-run'
    ]
    env = dict(os.environ, PYTHONWARNINGS='ignore', OMP_NUM_THREADS='1')
    out = tool_server.run(
        cmd, capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert not wd.exists()
    listed = out.stdout[out.stdout.index(
        f'4 of 4 runs to train (2 at a time, in this order; 0 stored in '
        f'{wd}/results.json):'):]
    assert listed.splitlines()[1:] == [
        '  sign_toy/0/0: from scratch',
        '  sign_toy_st/0/0: after sign_toy/0/0 ends, from its checkpoint at '
        'the end of the stages they run alike',
        '  sign_toy/0/1: from scratch',
        '  sign_toy_st/0/1: after sign_toy/0/1 ends, from its checkpoint at '
        'the end of the stages they run alike',
    ], out.stdout
