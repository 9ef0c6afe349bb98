"""Data-loss cases, each through the user's entry point: no tool
writes onto, or into, what it reads, and toy tables sharing a work dir keep
each other's runs. Every refused command leaves its input byte for byte as
it was and fails before any work."""
import json
import os
import os.path as osp
import sys

import pytest
import tool_server
import torch
from e2e_utils import REPO, toy_workspace

from mmseg_sign.analysis.toy_results import read_results, record_run

# every test here starts a tool process or trains a run
pytestmark = pytest.mark.slow

TOY = osp.join(REPO, 'configs', 'sign', 'sign_toy.py')


def tool(args, cwd):
    """``(returncode, stdout + stderr)`` of ``tools/<args[0]>``."""
    env = dict(os.environ, PYTHONWARNINGS='ignore', OMP_NUM_THREADS='1')
    proc = tool_server.run(
        [sys.executable,
         osp.join(REPO, 'tools', args[0]), *args[1:]],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300)
    return proc.returncode, proc.stdout + proc.stderr


def refused(args, cwd, protected, message):
    """The command fails with ``message`` and ``protected`` is unchanged."""
    before = {p: open(p, 'rb').read() for p in protected}
    rc, out = tool(args, cwd)
    assert rc != 0, out[-2000:]
    assert message in out, out[-2000:]
    for path, data in before.items():
        assert open(path, 'rb').read() == data, path
    return out


@pytest.fixture(scope='module')
def ws(tmp_path_factory, toy_root):
    return toy_workspace(tmp_path_factory, toy_root, 'ws_guard')


def test_toy_table_out_onto_its_config_or_results(ws):
    cfg = ws / 'sign_copy.py'
    cfg.write_text(
        open(TOY).read().replace("'../_base_/", f"'{REPO}/configs/_base_/"))
    wd = ws / 'table'
    wd.mkdir()
    (wd / 'results.json').write_text(json.dumps({'sign_copy/0/0': {}}))
    common = ['--seeds', '0', '--data-seeds', '0', '--work-dir', str(wd)]
    refused(
        ['toy_table.py', str(cfg), *common, '--out',
         str(cfg)], ws, [cfg], 'is the config')
    refused(
        ['toy_table.py',
         str(cfg), *common, '--out',
         str(wd / 'results.json')], ws, [wd / 'results.json'],
        'is the results file')
    assert not (wd / 'data0').exists()  # refused before any work
    # an output that cannot be written is found by writing, before the
    # runs (it used to fail after all of them)
    for flag in ('--picture', '--out'):
        refused([
            'toy_table.py',
            str(cfg), *common, flag, '/proc/sign/predictions.png'
        ], ws, [wd / 'results.json'],
                'cannot be written: creating a file in /proc failed')
    assert not (wd / 'data0').exists()


def test_toy_table_damaged_results_named(ws):
    wd = ws / 'table_damaged'
    wd.mkdir()
    (wd / 'results.json').write_text('{"sign_toy/0/0": {"transfer"')
    out = refused([
        'toy_table.py', TOY, '--seeds', '0', '--data-seeds', '0', '--work-dir',
        str(wd)
    ], ws, [wd / 'results.json'], 'is not a toy-table results file')
    assert 'Traceback' not in out


def test_results_writers_keep_each_others_runs(tmp_path):
    """Two toy tables on one work dir: the second's stale view of the file
    (read when it started) must not drop the run the first stored since
    (before: last writer wins)."""
    path = str(tmp_path / 'results.json')
    stale = read_results(path)  # process B starts: nothing stored yet
    record_run(path, 'a/0/0', {'hIoU': 1.0})  # process A stores its run
    stale.update(record_run(path, 'b/0/0', {'hIoU': 2.0}))  # then B
    assert read_results(path) == stale == {
        'a/0/0': {
            'hIoU': 1.0
        },
        'b/0/0': {
            'hIoU': 2.0
        }
    }


def test_build_class_embeddings_out_onto_a_source(ws):
    vectors = ws / 'vectors.txt'
    vectors.write_text('2 3\nkite 0.1 0.2 0.3\nflag 0.3 0.2 0.1\n')
    classes = ws / 'classes.txt'
    classes.write_text('kite\nflag\n')
    refused([
        'build_class_embeddings.py', '--source', f'{vectors}:word2vec',
        '--classes',
        str(classes), '--out',
        str(vectors)
    ], ws, [vectors], f'is the source {vectors}')
    refused([
        'build_class_embeddings.py', '--source', f'{vectors}:word2vec',
        '--classes',
        str(classes), '--out',
        str(classes)
    ], ws, [classes], 'is the class list')


def test_onnx_export_out_onto_the_class_table(ws):
    table = ws / 'data' / 'toy' / 'class_embeddings.npz'
    ckpt = ws / 'empty.pth'
    ckpt.write_bytes(b'')
    refused([
        'deployment/pytorch2onnx.py', TOY,
        str(ckpt), '--out',
        str(table), '--cfg-options',
        f'model.decode_head.class_embeddings={table}'
    ], ws, [table], 'is the class-embedding table')


def test_test_tool_out_into_the_ground_truth(ws):
    ckpt = ws / 'empty.pth'
    ckpt.write_bytes(b'')
    labels = ws / 'data' / 'toy' / 'SegmentationClass'
    first = sorted(labels.iterdir())[0]
    for flag in ('--out', '--show-dir'):
        refused(['test.py', TOY, str(ckpt), flag,
                 str(labels)], ws, [first], 'which the command reads')
    refused(['test.py', TOY,
             str(ckpt), '--out',
             str(labels / 'pred')], ws, [first],
            'lies inside the dataset seg_map_path folder')


def test_make_random_voc_onto_a_real_data_set(tmp_path):
    root = tmp_path / 'VOC2012'
    split = root / 'ImageSets' / 'Segmentation'
    split.mkdir(parents=True)
    (split / 'val.txt').write_text('2007_000033\n')
    out = refused([
        'analysis/make_random_voc.py',
        str(root), '--num-train', '2', '--num-val', '1', '--size', '8', '8'
    ], tmp_path, [split / 'val.txt'], 'already holds a data set')
    assert 'ImageSets/Segmentation: 1 files' in out and '--force' in out
    rc, out = tool([
        'analysis/make_random_voc.py',
        str(root), '--num-train', '2', '--num-val', '1', '--size', '8', '8',
        '--force'
    ], tmp_path)
    assert rc == 0, out
    assert (split / 'val.txt').read_text() == 'val_00000\n'


@pytest.mark.parametrize('args, message', [
    (['--sizes', '0x0'], '--sizes 0x0: each size is HxW with H, W >= 32'),
    (['--sizes', '64by64'], '--sizes 64by64: each size is HxW'),
    (['--crop', '1', '1'], '--crop 1 1: H and W must be >= 32'),
    (['--batch-size', '0'], '--batch-size must be >= 1, got 0'),
    (['--repeats', '0'], '--repeats must be >= 1, got 0'),
    (['--warmup', '-1'], '--warmup must be >= 0'),
    pytest.param(['--device', 'cuda'], '--device cuda, but torch.cuda.'
                 'is_available() is False',
                 marks=pytest.mark.skipif(
                     torch.cuda.is_available(), reason='a GPU is here')),
])
def test_benchmark_arguments_checked_first(args, message):
    """Bad arguments of benchmark.py: a usage error naming the value
    (exit 2, before any model is built; before: raw errors)."""
    rc, out = tool(['analysis/benchmark.py', TOY, *args], REPO)
    assert rc == 2 and message in out and 'Traceback' not in out, out


@pytest.mark.parametrize(
    'args, message',
    [
        (['--jobs', '0'], '--jobs must be >= 1, got 0'),
        (['--jobs', '-3'], '--jobs must be >= 1, got -3'),
        (['--data-seeds', '-1'], "'-1' is not a seed or a range of seeds"),
        (['--seeds', '9-0'], "'9-0': write a range as LOW-HIGH"),
        (['--seed-key', 'default_hooks.sign_random.init_seed'
          ], '--seed-key default_hooks.sign_random.init_seed: give the runs a '
         '--tag'),
        (['--tag', 'a/b', '--cfg-options', 'x=1'
          ], "--tag 'a/b': it names run"),
        # the same run twice: two jobs would train it at once
        (['--seeds', '0', '0', '--jobs', '2'], '--seeds names 0 more than once'
         ),
        (['--data-seeds', '1', '1'], '--data-seeds names 1 more than once'),
    ])
def test_toy_table_arguments_checked_first(tmp_path, args, message):
    rc, out = tool(
        ['toy_table.py', TOY, '--work-dir',
         str(tmp_path / 'w'), *args], REPO)
    assert rc == 2 and message in out, out
    assert not (tmp_path / 'w').exists()


def test_toy_table_config_named_twice(tmp_path):
    rc, out = tool(
        ['toy_table.py', TOY, TOY, '--work-dir',
         str(tmp_path / 'w')], REPO)
    assert rc == 2 and 'configs names' in out and 'more than once' in out
    assert not (tmp_path / 'w').exists()


def stored_run(key):
    metrics = dict(mIoU_seen=70.0, mIoU_unseen=30.0, hIoU=42.0)
    return dict(
        key=key,
        seconds=1.0,
        params=dict(sim=1, model=2),
        train=metrics,
        transfer=metrics,
        self_train=metrics)


def test_toy_table_knows_a_run_by_what_it_ran(tmp_path):
    """A stored run is reused only when its resolved config
    matches (same file name from another folder, or other --cfg-options
    without --tag: refused before anything trains); a matching one is
    reused without training; --sweep and --rows are checked first."""
    from mmseg_sign.analysis.toy_results import run_key
    wd = tmp_path / 'w'
    wd.mkdir()
    results = wd / 'results.json'
    results.write_text(json.dumps({'sign_toy/0/0': stored_run(run_key(TOY))}))
    common = [TOY, '--seeds', '0', '--data-seeds', '0', '--work-dir', str(wd)]
    rc, out = tool(['toy_table.py', *common], REPO)  # reused, not trained
    assert rc == 0 and '| sign_toy@self_train | 1 | 70.00' in out, out
    other = tmp_path / 'other' / 'sign_toy.py'  # same stem, other config
    other.parent.mkdir()
    other.write_text(f"_base_ = [{TOY!r}]\nmodel = dict(decode_head=dict("
                     "loss_mmd_weight=5.0))\n")
    refused(['toy_table.py', str(other), *common[1:]], REPO, [results],
            'ran another config or other --cfg-options: sign_toy/0/0')
    # other options under the config's own name: refused before (issue
    # 49, C13: --cfg-options need a --tag)
    refused([
        'toy_table.py', *common, '--cfg-options',
        'model.decode_head.loss_mmd_weight=5.0'
    ], REPO, [results], 'give them a --tag NAME')
    for args, message in [
        (['--sweep', 'train_cfg.stages.2.temprature=1,2'], 'no such key'),
        (['--sweep',
          'train_cfg.stages.2.temperature=1,1.0'], "'1.0' repeats a value"),
        (['--rows', 'AST=sign_toy@self_training'],
         "sign_toy has no stage 'self_training'"),
        (['--rows', 'X=sign_tyo@transfer'], "no run named 'sign_tyo'"),
        (['--compare', 'X', 'sign_toy@self_train'], "--compare 'X' "
         "'sign_toy@self_train': no row 'X'; the rows are")
    ]:
        rc, out = tool(['toy_table.py', *common, *args], REPO)
        assert rc == 2 and message in out, out
    assert os.listdir(wd) == ['results.json']  # nothing made or trained


def test_make_toy_dataset_onto_an_existing_data_set(tmp_path, toy_root):
    """tools/make_toy_dataset.py --out onto a data set mixed
    old and new files; now refused, and --force replaces the toy data set
    (no file of the old one left)."""
    import shutil
    out = tmp_path / 'toy'
    shutil.copytree(toy_root, out)
    old = sorted(p.name for p in (out / 'JPEGImages').iterdir())
    embeddings = out / 'class_embeddings.npz'
    refused([
        'make_toy_dataset.py', '--out',
        str(out), '--num-train', '2', '--num-val', '1'
    ], tmp_path, [embeddings], 'is not empty')
    rc, text = tool([
        'make_toy_dataset.py', '--out',
        str(out), '--num-train', '2', '--num-val', '1', '--force'
    ], tmp_path)
    assert rc == 0, text
    new = sorted(p.name for p in (out / 'JPEGImages').iterdir())
    assert len(new) == 3 and len(old) > 3
    assert (out / 'ImageSets' / 'Segmentation' / 'train.txt').read_text() \
        .split() == [n[:-4] for n in new if n.startswith('train')]


def test_analysis_tools_out_onto_their_inputs(ws, tmp_path):
    """The converter and analysis tools that write a file: never onto what
    they read (CaGNet's downloaded pickles, a sweep file, a checkpoint, a
    dataset's label folder), refused before any work."""
    pkl = tmp_path / 'fasttext.pkl'  # refused before it is read
    pkl.write_bytes(b'CaGNet download')
    w2v = tmp_path / 'word2vec.pkl'
    w2v.write_bytes(b'CaGNet download too')
    for out, target in [(pkl, pkl), (w2v, w2v)]:
        refused([
            'dataset_converters/cagnet_word_vectors.py', '--dataset', 'voc',
            '--fasttext',
            str(pkl), '--word2vec',
            str(w2v), '--out',
            str(out)
        ], ws, [target], 'is the --')
    sweep = tmp_path / 'calibration_sweep.json'
    sweep.write_text('{"points": []}')
    refused(['analysis/plot_calibration.py',
             str(sweep), '--out',
             str(sweep)], ws, [sweep], 'is the sweep file')
    ckpt = tmp_path / 'teacher.pth'
    ckpt.write_bytes(b'weights')
    refused([
        'analysis/pseudo_label_quality.py', TOY,
        str(ckpt), '--out',
        str(ckpt)
    ], ws, [ckpt], 'is the checkpoint')
    labels = ws / 'data' / 'toy' / 'SegmentationClass'
    first = sorted(labels.iterdir())[0]
    out = refused([
        'analysis/pseudo_label_quality.py', TOY,
        str(ckpt), '--out',
        str(first)
    ], ws, [first], 'lies inside the dataset seg_map_path folder')
    assert 'Traceback' not in out


def test_outputs_onto_the_images_a_tool_reads(ws):
    """``pytorch2onnx --verify --out`` onto a photograph of the
    set it verifies on, and ``parity.py --out`` onto a photograph of the
    data it reads, replaced it (rc 0); the guard compared the output with
    the files named on the command line only. Both refused before work."""
    images = ws / 'data' / 'toy' / 'JPEGImages'
    first = sorted(images.iterdir())[0]
    ckpt = ws / 'empty.pth'
    ckpt.write_bytes(b'')
    out = refused([
        'deployment/pytorch2onnx.py', TOY,
        str(ckpt), '--out',
        str(first), '--verify'
    ], ws, [first], 'lies inside the dataset img_path folder')
    assert 'Traceback' not in out
    out = refused([
        'analysis/parity.py', TOY, '--settings', 'cpu:float64', 'cpu:float32',
        '--out',
        str(first)
    ], ws, [first], 'lies inside the dataset img_path folder')
    assert 'Traceback' not in out


def test_toy_table_report_only_with_nothing_stored(tmp_path):
    """--report-only on a work dir without the runs: a usage error (it
    printed an empty table with rc 0), nothing trained or made."""
    rc, out = tool([
        'toy_table.py', TOY, '--report-only', '--work-dir',
        str(tmp_path / 'w')
    ], REPO)
    assert rc == 2, out
    assert 'holds no stored run of these configs' in out
    assert 'without --report-only' in out
    made = tmp_path / 'w'
    assert not made.exists() or not any(made.iterdir())


@pytest.mark.skipif(torch.cuda.is_available(), reason='a GPU is here')
@pytest.mark.parametrize(
    'script', ['analysis/unseen_confusion.py', 'analysis/toy_report.py'])
def test_analysis_device_checked_first(tmp_path, script):
    """--device cuda without a GPU: a usage error before anything is
    built (it was torch's raw 'Torch not compiled with CUDA enabled')."""
    extra = ['--work-dir', str(tmp_path)] if 'toy_report' in script else []
    rc, out = tool(
        [script, TOY,
         str(tmp_path / 'none.pth'), '--device', 'cuda', *extra], REPO)
    assert rc == 2, out
    assert "--device: device='cuda', but torch sees no GPU here" in out
    assert 'Traceback' not in out


# ---- what mmengine writes into a work dir
SHORT_RUN = """
train_cfg = dict(stages=[dict(name='train', iters=2)], val_interval=100)
default_hooks = dict(checkpoint=dict(interval=2), logger=dict(interval=1))
train_dataloader = dict(batch_size=2, num_workers=0, persistent_workers=False)
val_dataloader = dict(num_workers=0, persistent_workers=False)
test_dataloader = val_dataloader
"""


def short_config(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'_base_ = [{TOY!r}]\n# my comment\n{SHORT_RUN}')
    return str(path)


@pytest.mark.parametrize('name', ['train.py', 'test.py'])
def test_a_work_dir_holding_the_config_is_refused(ws, name):
    """mmengine's Runner writes the resolved config to WORK_DIR/NAME.py:
    with the config itself in the work dir, its _base_ and comments were
    replaced (rc 0)."""
    wd = ws / f'wd_holds_{name[:-3]}'
    cfg = short_config(wd / 'my_sign.py')
    ckpt = ws / 'any.pth'
    ckpt.write_bytes(b'not read')
    args = [name, cfg] + ([str(ckpt)] if name == 'test.py' else
                          []) + ['--work-dir', str(wd)]
    out = refused(args, ws, [cfg], f'the work dir {wd} holds the config '
                  f'{cfg} itself')
    assert 'Traceback' not in out
    if name == 'train.py':  # mmseg's own: the schedule's ConfigGuardRunner
        from e2e_utils import mmseg_tool
        env = dict(os.environ, PYTHONWARNINGS='ignore', OMP_NUM_THREADS='1')
        before = open(cfg, 'rb').read()
        proc = tool_server.run([
            sys.executable,
            mmseg_tool('train.py'), cfg, '--work-dir',
            str(wd)
        ],
                               cwd=ws,
                               env=env,
                               capture_output=True,
                               text=True,
                               timeout=300)
        assert proc.returncode != 0
        assert f'the work dir {wd} holds the config {cfg} itself' in \
            proc.stdout + proc.stderr
        assert open(cfg, 'rb').read() == before
        assert not [f for f in os.listdir(wd) if f.endswith('.pth')]


def test_resume_from_another_runs_checkpoint_is_refused(ws):
    """``--resume`` with load_from=OTHER resumed OTHER (mmengine's rule) and
    wrote its checkpoints over the work dir's own ``iter_2.pth``; refused
    when the work dir holds checkpoints, through this project's
    tools/train.py and mmseg's own (the check is a hook's too)."""
    from e2e_utils import run_tool
    cfg = short_config(ws / 'cfgs' / 'short.py')
    for wd in ('wd_own', 'wd_other'):
        run_tool(['train.py', cfg, '--work-dir', str(ws / wd)], ws)
    own = ws / 'wd_own' / 'iter_2.pth'
    other = ws / 'wd_other' / 'iter_2.pth'
    message = (f'--resume with load_from={other}, another run\'s '
               f'checkpoint, in the work dir {ws / "wd_own"}, which holds '
               'checkpoints of its own (iter_2.pth)')
    refused([
        'train.py', cfg, '--work-dir',
        str(ws / 'wd_own'), '--resume', '--cfg-options', f'load_from={other}'
    ], ws, [own], message)
    # mmseg's own tools/train.py: the same refusal from the hook
    from e2e_utils import mmseg_tool
    before = own.read_bytes()
    env = dict(os.environ, PYTHONWARNINGS='ignore', OMP_NUM_THREADS='1')
    proc = tool_server.run([
        sys.executable,
        mmseg_tool('train.py'), cfg, '--work-dir',
        str(ws / 'wd_own'), '--resume', '--cfg-options', f'load_from={other}'
    ],
                           cwd=ws,
                           env=env,
                           capture_output=True,
                           text=True,
                           timeout=300)
    assert proc.returncode != 0 and message in proc.stdout + proc.stderr
    assert own.read_bytes() == before
    # kept: --resume alone continues the work dir's own run
    out = run_tool([
        'train.py', cfg, '--work-dir',
        str(ws / 'wd_own'), '--resume', '--cfg-options',
        'train_cfg.stages.0.iters=3'
    ], ws)
    assert 'resumed epoch: 0, iter: 2' in out


def test_a_new_run_over_another_runs_checkpoints_is_refused(ws):
    """A run without ``--resume`` in a used work dir (after a
    crash, or the same command twice) wrote its ``iter_N.pth`` and
    ``last_checkpoint`` over the earlier run's, rc 0. Refused by this
    project's tools/train.py and, through the hook, by mmseg's; allowed
    with ``--overwrite-checkpoints`` or ``overwrite_checkpoints=True``."""
    from e2e_utils import mmseg_tool, run_tool
    cfg = short_config(ws / 'cfgs' / 'short_fresh.py')
    wd = ws / 'wd_fresh'
    run_tool(['train.py', cfg, '--work-dir', str(wd)], ws)
    kept = [wd / 'iter_2.pth', wd / 'last_checkpoint']
    message = (f'the work dir {wd} holds checkpoints of an earlier run '
               '(iter_2.pth): a new run would write its own over them')
    out = refused(['train.py', cfg, '--work-dir', str(wd)], ws, kept, message)
    assert '--resume' in out and '--overwrite-checkpoints' in out
    assert 'Traceback' not in out
    before = {p: p.read_bytes() for p in kept}
    env = dict(os.environ, PYTHONWARNINGS='ignore', OMP_NUM_THREADS='1')
    proc = tool_server.run(
        [sys.executable,
         mmseg_tool('train.py'), cfg, '--work-dir',
         str(wd)],
        cwd=ws,
        env=env,
        capture_output=True,
        text=True,
        timeout=300)
    assert proc.returncode != 0 and message in proc.stdout + proc.stderr
    assert {p: p.read_bytes() for p in kept} == before
    # the explicit choices: replace them (this tool's flag; the config key
    # that mmseg's tool takes), or continue them (--resume, kept)
    out = run_tool([
        'train.py', cfg, '--work-dir',
        str(wd), '--overwrite-checkpoints', '--cfg-options',
        'randomness.seed=1'
    ], ws)
    assert (wd / 'iter_2.pth').read_bytes() != before[wd / 'iter_2.pth']
    proc = tool_server.run([
        sys.executable,
        mmseg_tool('train.py'), cfg, '--work-dir',
        str(wd), '--cfg-options', 'overwrite_checkpoints=True'
    ],
                           cwd=ws,
                           env=env,
                           capture_output=True,
                           text=True,
                           timeout=300)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-2000:]
    out = run_tool([
        'train.py', cfg, '--work-dir',
        str(wd), '--resume', '--cfg-options', 'train_cfg.stages.0.iters=3'
    ], ws)
    assert 'resumed epoch: 0, iter: 2' in out


def test_toy_table_outputs_into_its_data_or_runs(ws, toy_root):
    """``--picture`` / ``--out`` inside the work dir's own
    ``data0/`` (an image, ``class_embeddings.npz``) or a run's folder
    replaced what the runs read (rc 0): refused before any work."""
    import shutil
    wd = ws / 'table_wd'
    shutil.copytree(toy_root, wd / 'data0')
    table = wd / 'data0' / 'class_embeddings.npz'
    refused([
        'toy_table.py', TOY, '--seeds', '0', '--work-dir',
        str(wd), '--picture',
        str(table)
    ], ws, [table], 'lies inside the toy data folder of data seed 0')
    image = sorted((wd / 'data0' / 'JPEGImages').iterdir())[0]
    refused([
        'toy_table.py', TOY, '--seeds', '0', '--work-dir',
        str(wd), '--out',
        str(image)
    ], ws, [image], 'lies inside the toy data folder of data seed 0')
    run = wd / 'sign_toy_data0_seed0'
    run.mkdir()
    ckpt = run / 'iter_1400.pth'
    ckpt.write_bytes(b'a checkpoint')
    refused([
        'toy_table.py', TOY, '--seeds', '0', '--work-dir',
        str(wd), '--out',
        str(ckpt)
    ], ws, [ckpt], 'lies inside the run folder sign_toy_data0_seed0')
