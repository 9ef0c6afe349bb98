"""CamVid on real photographs: the converter, ZeroShotCamVidDataset, the
class-embedding table from CaGNet's COCO-Stuff vectors, and a 2 + 2 + 2
iteration run of configs/sign/sign_camvid.py through tools/train.py and
tools/test.py (docs/camvid.md).

The real files are read from ``$SIGN_CAMVID`` (the SegNet tutorial's
``CamVid`` folder) and ``$SIGN_CAGNET_WORD_VECTORS``, or the project's
shared folder beside the checkout; the tests that need them are skipped when
absent.
"""
import json
import os
import pickle
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest
import tool_server
from e2e_utils import last_metrics, load_tool, run_tool, write_config
from PIL import Image

from mmseg_sign.datasets import ZeroShotCamVidDataset
from mmseg_sign.datasets.class_names import CAMVID_CLASSES, CAMVID_TO_COCOSTUFF
from mmseg_sign.embeddings import CAGNET_LABELS
from mmseg_sign.embeddings.table import read_class_embeddings

REPO = Path(__file__).resolve().parents[2]
SHARED = Path(__file__).resolve().parents[3] / 'shared'
CAMVID = Path(os.environ.get('SIGN_CAMVID', SHARED / 'datasets/camvid'))
VECTORS = Path(
    os.environ.get('SIGN_CAGNET_WORD_VECTORS',
                   SHARED / 'reference/cagnet_word_vectors'))

needs_camvid = pytest.mark.skipif(
    not (CAMVID / 'train.txt').is_file(),
    reason=f'CamVid (SegNet tutorial layout) not found at {CAMVID} (set '
    'SIGN_CAMVID to the folder with train/, trainannot/, train.txt)')
needs_vectors = pytest.mark.skipif(
    not (VECTORS / 'cocostuff' / 'fasttext.pkl').is_file(),
    reason=f'CaGNet word vectors not found at {VECTORS} (set '
    'SIGN_CAGNET_WORD_VECTORS)')

converter = load_tool('dataset_converters/camvid')
# a few real pairs per split (the first, and one with every class present
# in the split's first images)
PICK = dict(train=4, val=3)


@pytest.fixture(scope='module')
def small_camvid(tmp_path_factory):
    """A SegNet-layout CamVid with the first pairs of each split (the real
    files, the tutorial's list format)."""
    root = tmp_path_factory.mktemp('camvid_src')
    for split, count in PICK.items():
        (root / split).mkdir()
        (root / f'{split}annot').mkdir()
        lines = (CAMVID / f'{split}.txt').read_text().split('\n')
        kept = [line for line in lines if line.strip()][:count]
        for line in kept:
            for path, sub in zip(line.split(), (split, f'{split}annot')):
                shutil.copy(CAMVID / sub / os.path.basename(path), root / sub)
        (root / f'{split}.txt').write_text('\n'.join(kept) + '\n')
    return root


@pytest.fixture(scope='module')
def converted(small_camvid, tmp_path_factory):
    out = tmp_path_factory.mktemp('camvid_out') / 'camvid'
    converter.main([str(small_camvid), str(out)])  # the default: 180x135
    return out


@needs_camvid
def test_converter_keeps_ids_and_voids_11(small_camvid, tmp_path):
    out = tmp_path / 'full'
    converter.main([str(small_camvid), str(out), '--scale', '1'])
    for split, count in PICK.items():
        names = sorted(p.name for p in (small_camvid / split).iterdir())
        assert sorted(os.listdir(out / 'img_dir' / split)) == names
        for name in names:
            raw = np.asarray(Image.open(small_camvid / f'{split}annot' / name))
            got = np.asarray(Image.open(out / 'ann_dir' / split / name))
            # by hand: 0-10 kept, 11 (void) -> 255, nothing else
            want = np.where(raw == 11, 255, raw)
            np.testing.assert_array_equal(got, want)
            image = np.asarray(Image.open(small_camvid / split / name))
            np.testing.assert_array_equal(
                np.asarray(Image.open(out / 'img_dir' / split / name)), image)


@needs_camvid
def test_converter_scale(converted, small_camvid):
    name = sorted(os.listdir(converted / 'ann_dir' / 'train'))[0]
    label = np.asarray(Image.open(converted / 'ann_dir/train' / name))
    image = Image.open(converted / 'img_dir/train' / name)
    assert image.size == (180, 135) and label.shape == (135, 180)
    raw = np.asarray(Image.open(small_camvid / 'trainannot' / name))
    # nearest-neighbour: every label of the small map is a label of the
    # big one (void as 255), and the shares stay close
    assert set(np.unique(label)) <= set(np.where(raw == 11, 255, raw).ravel())
    for cls in (0, 1, 3):  # sky, building, road: large regions
        assert abs((label == cls).mean() - (raw == cls).mean()) < 0.02


@needs_camvid
def test_converter_refuses_bad_input(small_camvid, tmp_path, capsys):
    out = tmp_path / 'out'
    out.mkdir()
    (out / 'keep.txt').write_text('x')
    with pytest.raises(SystemExit):
        converter.main([str(small_camvid), str(out)])
    assert 'not empty' in capsys.readouterr().err
    with pytest.raises(SystemExit):  # inside its input
        converter.main([str(small_camvid), str(small_camvid / 'sub')])
    assert 'lies inside the CamVid folder' in capsys.readouterr().err
    with pytest.raises(SystemExit):
        converter.main(
            [str(small_camvid),
             str(tmp_path / 'o2'), '--scale', '0'])
    assert '--scale must be in (0, 1]' in capsys.readouterr().err
    # a colour label map (RGB) is named, not silently converted
    bad = tmp_path / 'bad'
    shutil.copytree(small_camvid, bad)
    name = sorted(os.listdir(bad / 'valannot'))[0]
    Image.new('RGB', (480, 360)).save(bad / 'valannot' / name)
    with pytest.raises(SystemExit) as err:
        converter.main([str(bad), str(tmp_path / 'o3')])
    assert name in str(err.value) and 'RGB' in str(err.value)


@needs_camvid
def test_converter_refuses_a_shifted_list_and_keeps_the_source(
        small_camvid, tmp_path, capsys):
    """A list line pairing image X with label Y is refused (it
    was converted as written); --force never deletes a source that lies in
    the output; a scale that leaves nothing to segment is refused; and a
    conversion that fails midway (a truncated label) leaves the previous
    data set as it was, never a half one."""
    # 1. a list out of step
    bad = tmp_path / 'shifted'
    shutil.copytree(small_camvid, bad)
    lines = (bad / 'val.txt').read_text().split('\n')
    first, second = lines[0].split(), lines[1].split()
    lines[0] = f'{first[0]} {second[1]}'
    (bad / 'val.txt').write_text('\n'.join(lines))
    with pytest.raises(SystemExit) as err:
        converter.main([str(bad), str(tmp_path / 'o1')])
    assert 'val.txt:1 pairs the image' in str(err.value)
    assert 'out of step' in str(err.value)
    # 2. the source inside the output, with --force
    out = tmp_path / 'out2'
    src = out / 'img_dir'
    shutil.copytree(small_camvid, src)
    before = sorted(p.name for p in src.rglob('*'))
    with pytest.raises(SystemExit):
        converter.main([str(src), str(out), '--force'])
    assert 'lies inside the output' in capsys.readouterr().err
    assert sorted(p.name for p in src.rglob('*')) == before
    # 3. a scale with nothing left to segment
    with pytest.raises(SystemExit) as err:
        converter.main(
            [str(small_camvid),
             str(tmp_path / 'o3'), '--scale', '0.001'])
    assert 'below 32 pixels a side' in str(err.value)
    assert '--scale >= 0.089' in str(err.value)
    assert not (tmp_path / 'o3' / 'img_dir').exists()
    # 4. a truncated label: the earlier conversion stays whole
    out = tmp_path / 'out4'
    converter.main([str(small_camvid), str(out)])
    kept = {p: p.read_bytes() for p in out.rglob('*.png')}
    broken = tmp_path / 'broken'
    shutil.copytree(small_camvid, broken)
    last = sorted(os.listdir(broken / 'valannot'))[-1]
    data = (broken / 'valannot' / last).read_bytes()
    (broken / 'valannot' / last).write_bytes(data[:len(data) // 2])
    with pytest.raises(SystemExit) as err:
        converter.main([str(broken), str(out), '--force'])
    assert last in str(err.value) and 'nothing was written' in str(err.value)
    assert {p: p.read_bytes() for p in out.rglob('*.png')} == kept
    assert sorted(os.listdir(out)) == ['ann_dir', 'img_dir', 'splits']


@needs_camvid
def test_converter_refuses_repeats_clashes_and_small_photographs(
        small_camvid, tmp_path):
    """A list line given twice (the photograph counted
    twice), two photographs with one name (x.png and x.jpg: one written
    over the other) and a photograph other than the first below 32 pixels
    a side are refused, naming the line or file; nothing is written."""

    def refused(mutate, *needles):
        src = tmp_path / f'src{len(os.listdir(tmp_path))}'
        shutil.copytree(small_camvid, src)
        mutate(src)
        out = tmp_path / f'out{len(os.listdir(tmp_path))}'
        with pytest.raises(SystemExit) as err:
            converter.main([str(src), str(out)])
        for needle in needles:
            assert needle in str(err.value), str(err.value)
        assert not (out / 'img_dir').exists()

    def twice(src):
        lines = (src / 'val.txt').read_text().splitlines()
        (src / 'val.txt').write_text('\n'.join(lines + lines[:1]) + '\n')

    name = (small_camvid / 'val.txt').read_text().split()[0]
    stem = os.path.splitext(os.path.basename(name))[0]
    n = len((small_camvid / 'val.txt').read_text().splitlines())
    refused(
        twice, f'val.txt:{n + 1} lists {stem}.png again (line 1): the '
        'photograph would count twice')

    def same_stem(src):
        lines = (src / 'val.txt').read_text().splitlines()
        img, lab = lines[0].split()
        shutil.copy(src / 'val' / os.path.basename(img),
                    src / 'val' / f'{stem}.jpg')
        (src /
         'val.txt').write_text('\n'.join(lines + [f'{img[:-4]}.jpg {lab}']) +
                               '\n')

    refused(
        same_stem, f'lists {stem}.jpg and line 1 {stem}.png: both would '
        f'be written as {stem}.png, one over the other')

    def small_last(src):
        last = (src / 'val.txt').read_text().split()[-2:]
        img = src / 'val' / os.path.basename(last[0])
        lab = src / 'valannot' / os.path.basename(last[1])
        Image.open(img).crop((0, 0, 480, 60)).save(img)
        Image.open(lab).crop((0, 0, 480, 60)).save(lab)

    # at the default --scale 0.375: 180x23 (the first photograph is fine)
    refused(small_last, 'is 480x60: at --scale 0.375 180x22',
            'below 32 pixels a side', '--scale >= 0.533')

    def empty_test_list(src):
        (src / 'test.txt').write_text('\n')

    # an empty test.txt is not an absent test split
    refused(
        empty_test_list, 'test.txt lists no photographs: the test split '
        'would be left out', 'remove test.txt if the source has no test')


@needs_camvid
def test_converter_cuts_train_into_fit_and_held_out(tmp_path):
    """The held-out part for choosing a recipe: sequence 0016E5, frames
    04350-05940 of the tutorial's training list (54 photographs), the rest
    fit; together the training split, each name once."""
    names = [
        Path(line.split()[0]).stem
        for line in (CAMVID / 'train.txt').read_text().split('\n')
        if line.strip()
    ]
    counts = converter.write_train_splits(names, str(tmp_path))
    fit = (tmp_path / 'splits/train_fit.txt').read_text().split()
    held = (tmp_path / 'splits/train_held-out.txt').read_text().split()
    assert counts == {'fit': 313, 'held-out': 54}
    assert (len(fit), len(held)) == (313, 54)
    assert sorted(fit + held) == sorted(names)
    # by hand: every 30th frame from 04350 to 05940
    assert set(held) == {f'0016E5_{n:05d}' for n in range(4350, 5941, 30)}
    assert not any(
        n.startswith('0016E5_0') and 4350 <= int(n[7:]) <= 5940 for n in fit)


@needs_camvid
def test_the_photographs_are_the_size_the_config_is_for(converted):
    """The 480×360 config's training set on the 180×135 conversion:
    refused when the list is loaded, naming both sizes (the size the
    training pipeline's RandomResize starts from); the matching size, a
    pipeline without one, or photo_size=None, loads."""
    from mmengine.config import Config
    cfg = Config.fromfile(
        str(REPO / 'configs/sign/sign_lite0_camvid-480x360.py'))
    dataset = dict(cfg.train_dataloader.dataset, data_root=str(converted))
    dataset.pop('type')
    with pytest.raises(
            ValueError,
            match=r'holds 180×135 photographs .* made for 480×360 \(its '
            r'img_scale, .*point data_root at the 480×360 conversion'):
        ZeroShotCamVidDataset(**dataset)
    assert len(ZeroShotCamVidDataset(**dataset, photo_size=None)) == 4
    assert len(ZeroShotCamVidDataset(**dict(dataset, photo_size=(180,
                                                                 135)))) == 4
    kwargs = dict(
        data_root=str(converted),
        data_prefix=dict(img_path='img_dir/val', seg_map_path='ann_dir/val'),
        pipeline=[])
    assert len(ZeroShotCamVidDataset(**kwargs)) == 3


@needs_camvid
def test_dataset_holds_out_pole_and_masks_unseen(converted, small_camvid):
    common = dict(data_root=str(converted))
    val = ZeroShotCamVidDataset(
        data_prefix=dict(img_path='img_dir/val', seg_map_path='ann_dir/val'),
        pipeline=[
            dict(type='LoadImageFromFile'),
            dict(type='LoadAnnotations'),
            dict(type='PackSegInputs')
        ],
        **common)
    classes = [c for c in CAMVID_CLASSES if c != 'pole']
    assert list(val.metainfo['classes']) == classes
    assert val.metainfo['unseen_classes'] == ('pavement', 'car', 'pedestrian')
    assert len(val.metainfo['palette']) == 10
    # by hand: a raw id's new id is its class's index in the 10-class
    # list; pole (2) and void (11) -> 255
    lut = np.full(256, 255, np.uint8)
    for raw_id, name in enumerate(CAMVID_CLASSES):
        if name != 'pole':
            lut[raw_id] = classes.index(name)
    for i in range(len(val)):
        gt = val[i]['data_samples'].gt_sem_seg.data[0].numpy()
        name = os.path.basename(val.get_data_info(i)['seg_map_path'])
        raw = np.asarray(Image.open(converted / 'ann_dir/val' / name))
        raw = np.where(raw == 255, 11, raw)
        np.testing.assert_array_equal(gt, lut[raw])
    # training: no unseen pixel leaves the pipeline
    train = ZeroShotCamVidDataset(
        data_prefix=dict(
            img_path='img_dir/train', seg_map_path='ann_dir/train'),
        pipeline=[
            dict(type='LoadImageFromFile'),
            dict(type='LoadAnnotations'),
            dict(type='MaskUnseenClasses'),
            dict(type='PackSegInputs')
        ],
        **common)
    unseen = [classes.index(c) for c in train.metainfo['unseen_classes']]
    seen_any = set()
    for i in range(len(train)):
        gt = train[i]['data_samples'].gt_sem_seg.data[0].numpy()
        assert not np.isin(gt, unseen).any()
        seen_any |= set(np.unique(gt).tolist())
    assert seen_any - {255}, 'the training labels kept no seen class'


def trusted_pickle(path):
    """Independent reading of the (trusted) reference files."""
    with open(path, 'rb') as f, warnings.catch_warnings():
        warnings.simplefilter('ignore', DeprecationWarning)  # numpy.core
        return pickle.load(f)


@pytest.mark.slow
@needs_vectors
def test_camvid_table_is_the_cocostuff_rows_by_name(tmp_path):
    out = tmp_path / 'camvid10.npz'
    folder = VECTORS / 'cocostuff'
    run_tool([
        'dataset_converters/cagnet_word_vectors.py', '--dataset', 'camvid',
        '--fasttext',
        str(folder / 'fasttext.pkl'), '--word2vec',
        str(folder / 'word2vec.pkl'), '--out',
        str(out)
    ],
             cwd=REPO)
    names, table = read_class_embeddings(str(out))
    assert list(names) == [c for c in CAMVID_CLASSES if c != 'pole']
    fasttext = trusted_pickle(folder / 'fasttext.pkl')
    word2vec = trusted_pickle(folder / 'word2vec.pkl')
    labels = [
        line.split('\t')[1].strip()
        for line in (folder / 'labels_refined.txt').read_text().splitlines()
        if line.strip()
    ]
    assert labels == list(CAGNET_LABELS['cocostuff'])
    for name, row in zip(names, table):
        ref = labels.index(CAMVID_TO_COCOSTUFF[name])
        want = np.concatenate([fasttext[ref], word2vec[ref]])
        np.testing.assert_allclose(
            row, want / np.linalg.norm(want), rtol=1e-6, atol=1e-7)


@pytest.mark.slow
@needs_camvid
@needs_vectors
def test_sign_camvid_trains_and_tests(converted, tmp_path):
    """configs/sign/sign_camvid.py as shipped, shrunk to 2 + 2 + 2
    iterations, through tools/train.py and tools/test.py."""
    ws = tmp_path / 'ws'
    (ws / 'data').mkdir(parents=True)
    shutil.copytree(converted, ws / 'data' / 'camvid')
    folder = VECTORS / 'cocostuff'
    run_tool([
        'dataset_converters/cagnet_word_vectors.py', '--dataset', 'camvid',
        '--fasttext',
        str(folder / 'fasttext.pkl'), '--word2vec',
        str(folder / 'word2vec.pkl'), '--out',
        'data/embeddings/camvid10_cagnet_fasttext_word2vec.npz'
    ],
             cwd=ws)
    cfg = str(REPO / 'configs/sign/sign_camvid.py')
    out = run_tool([
        'train.py', cfg, '--work-dir', 'wd', '--cfg-options',
        'train_cfg.stages.0.iters=2', 'train_cfg.stages.1.iters=2',
        'train_cfg.stages.1.block_iters=1', 'train_cfg.stages.2.iters=2',
        'train_dataloader.batch_size=2'
    ],
                   cwd=ws)
    assert "SIGN stage 'train' (1/3): iterations 1-2" in out
    assert "SIGN stage 'transfer' (2/3): iterations 3-4" in out
    assert "SIGN stage 'self_train' (3/3): iterations 5-6" in out
    for stage in ('train', 'transfer'):
        assert f"Validation at the end of stage '{stage}'" in out
    assert out.count('mIoU_unseen:') == 3  # and at the plan's end
    run_tool(['test.py', cfg, 'wd/iter_6.pth', '--work-dir', 'wd_test'],
             cwd=ws)
    metrics = last_metrics(ws / 'wd_test')
    for key in ('mIoU_seen', 'mIoU_unseen', 'hIoU'):
        assert 0 <= metrics[key] <= 100
    # where the unseen classes' pixels go (docs/camvid.md's analysis)
    out = run_tool(['analysis/unseen_confusion.py', cfg, 'wd/iter_6.pth'],
                   cwd=ws)
    for name in ('pavement', 'car', 'pedestrian'):
        assert f'| {name} (unseen) |' in out or f'| {name} | 0 |' in out
    assert 'are labelled unseen.' in out
    # the table's runner on the config's own data (docs/camvid.md's
    # command, shrunk): no toy data made, the run named without a data seed
    out = run_tool([
        'toy_table.py', cfg, '--data', 'config', '--seeds', '0', '--work-dir',
        'table', '--tag', 'short', '--cfg-options',
        'train_cfg.stages.0.iters=2', 'train_cfg.stages.1.iters=2',
        'train_cfg.stages.1.block_iters=1', 'train_cfg.stages.2.iters=2',
        'train_dataloader.batch_size=2'
    ],
                   cwd=ws)
    results = json.loads((ws / 'table' / 'results.json').read_text())
    assert set(results) == {'sign_camvid+short/own/0'}
    assert sorted(os.listdir(ws / 'table')) == [
        'results.json', 'results.json.lock', 'sign_camvid+short_seed0'
    ]
    assert '| sign_camvid+short@self_train | 1 |' in out


@pytest.mark.slow
@needs_camvid
def test_supervised_lite0_camvid_trains_and_tests(small_camvid, tmp_path):
    """The ImageNet-feature ceiling (EfficientNet-Lite0 from the PyPI
    wheel), as shipped, on photographs converted at their 480×360, shrunk
    to 2 iterations, through tools/train.py and tools/test.py."""
    ws = tmp_path / 'ws'
    converter.main(
        [str(small_camvid),
         str(ws / 'data/camvid_480x360'), '--scale', '1'])
    cfg = str(REPO / 'configs/baselines/supervised_lite0_camvid-480x360.py')
    out = run_tool([
        'train.py', cfg, '--work-dir', 'wd', '--cfg-options',
        'train_cfg.max_iters=2', 'train_cfg.val_interval=2',
        'param_scheduler.0.end=2', 'default_hooks.checkpoint.interval=2',
        'train_dataloader.batch_size=2'
    ],
                   cwd=ws)
    assert 'load model from: efficientnet-lite://lite0' in out
    assert 'missing keys in source state_dict' not in out
    assert 'mIoU_unseen:' in out
    # trained with every class seen, scored on the zero-shot split: said
    # once, by the config (allow_split_change), so that tools/test.py needs
    # no flag (as toy_table's test-split scoring runs it)
    run_tool(['test.py', cfg, 'wd/iter_2.pth', '--work-dir', 'wd_test'],
             cwd=ws)
    metrics = last_metrics(ws / 'wd_test')
    for key in ('mIoU_seen', 'mIoU_unseen', 'hIoU', 'mIoU'):
        assert 0 <= metrics[key] <= 100
    # each class's IoU kept as a metric (the ceiling's "no class below 10")
    assert {f'IoU.{name}' for name in CAMVID_CLASSES if name != 'pole'} \
        == {k for k in metrics if k.startswith('IoU.')}


@needs_camvid
def test_class_weights_tool_counts_the_training_labels(converted, small_camvid,
                                                       tmp_path):
    """tools/analysis/class_weights.py on the converted photographs: the
    pixel counts by numpy from the tutorial's label maps (pole and void
    left out, ids in the 10-class order), then ENet's weights by hand."""
    tool = load_tool('analysis/class_weights')
    cfg = write_config(
        tmp_path / 'cfg.py',
        'configs/baselines/supervised_lite0_camvid-480x360.py',
        'train_dataloader = dict(dataset=dict('
        f'data_root={str(converted)!r}, photo_size=None))')
    got = tool.main([cfg])
    counts = np.zeros(12, np.int64)
    for path in sorted((converted / 'ann_dir/train').iterdir()):
        counts += np.bincount(
            np.asarray(Image.open(path)).ravel(), minlength=256)[:12]
    # CamVid ids of sky, building, road, pavement, tree, sign, fence, car,
    # pedestrian, bicyclist (2 = pole: held out)
    share = counts[[0, 1, 3, 4, 5, 6, 7, 8, 9, 10
                    ]] / counts[[0, 1, 3, 4, 5, 6, 7, 8, 9, 10]].sum()
    want = 1 / np.log(1.02 + share)
    np.testing.assert_allclose(got, np.round(want / want.mean(), 3))


@needs_camvid
def test_ceiling_class_weights_are_the_training_labels():
    """supervised_lite0_camvid-480x360.py's class weights are ENet's from
    the 367 training label maps (the tutorial's, at their 480×360), by
    numpy here, to the 3 decimals written in the config."""
    from mmengine.config import Config
    cfg = Config.fromfile(
        str(REPO / 'configs/baselines/supervised_lite0_camvid-480x360.py'))
    counts = np.zeros(256, np.int64)
    for path in sorted((CAMVID / 'trainannot').glob('*.png')):
        counts += np.bincount(
            np.asarray(Image.open(path)).ravel(), minlength=256)
    kept = counts[[0, 1, 3, 4, 5, 6, 7, 8, 9, 10]]  # no pole, no void
    want = 1 / np.log(1.02 + kept / kept.sum())
    np.testing.assert_allclose(
        cfg.model.decode_head.loss_decode.class_weight,
        np.round(want / want.mean(), 3),
        atol=1e-9)


@pytest.mark.slow
def test_table_data_seeds_are_for_the_toy_data():
    import sys
    proc = tool_server.run([
        sys.executable,
        str(REPO / 'tools/toy_table.py'),
        str(REPO / 'configs/sign/sign_camvid.py'), '--data', 'config',
        '--data-seeds', '1'
    ],
                           capture_output=True,
                           text=True,
                           cwd=REPO)
    assert proc.returncode == 2
    assert '--data-seeds is for the toy data' in proc.stderr
