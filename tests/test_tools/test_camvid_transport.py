"""tools/analysis/camvid_transport.py: the converted CamVid in parts of a
bounded size and back, pixel for pixel (the CamVid data on a GPU
machine, docs/gpu.md)."""
import os
import os.path as osp
import sys

import cv2
import numpy as np
import pytest
import tool_server
from e2e_utils import REPO

# every test here starts a tool process or trains a run
pytestmark = pytest.mark.slow

TOOL = osp.join(REPO, 'tools', 'analysis', 'camvid_transport.py')


def _converted(root, rng, n=(5, 2)):
    """A converted CamVid in miniature: photographs with noise (which PNG
    compresses badly), label maps, a split file; and an embeddings file."""
    for split, count in zip(('train', 'val'), n):
        for d in ('img_dir', 'ann_dir'):
            os.makedirs(osp.join(root, d, split))
        for i in range(count):
            img = rng.integers(0, 256, (36, 48, 3), dtype=np.uint8)
            ann = rng.integers(0, 11, (36, 48), dtype=np.uint8)
            ann[0, 0] = 255
            cv2.imwrite(osp.join(root, 'img_dir', split, f'{i:04d}.png'), img)
            cv2.imwrite(osp.join(root, 'ann_dir', split, f'{i:04d}.png'), ann)
    os.makedirs(osp.join(root, 'splits'))
    with open(osp.join(root, 'splits', 'train_fit.txt'), 'w') as f:
        f.write('0000\n0001\n')
    emb = osp.join(osp.dirname(root), 'emb.npz')
    np.savez(emb, vectors=rng.standard_normal((3, 4)))
    return emb


def _files(root):
    return sorted(
        osp.relpath(osp.join(d, f), root) for d, _, fs in os.walk(root)
        for f in fs)


def _tool(*args):
    proc = tool_server.run([sys.executable, TOOL, *map(str, args)],
                           capture_output=True,
                           text=True,
                           env=dict(
                               os.environ,
                               PYTHONWARNINGS='ignore',
                               OMP_NUM_THREADS='1'))
    return proc.returncode, proc.stdout + proc.stderr


def test_parts_come_back_pixel_for_pixel(tmp_path):
    root = str(tmp_path / 'camvid')
    emb = _converted(root, np.random.default_rng(0))
    # 0.01 MB parts: a photograph (~7 kB as WebP) fills most of one
    rc, out = _tool('pack', root, emb, tmp_path / 'xfer', '--part-mb', 0.001,
                    0.01)
    assert rc == 0, out[-2000:]
    parts = sorted(os.listdir(tmp_path / 'xfer'))
    assert len(parts) >= 7, parts
    for part in parts[1:]:
        size = sum(
            osp.getsize(osp.join(d, f))
            for d, _, fs in os.walk(tmp_path / 'xfer' / part) for f in fs)
        photos = [
            f for f in _files(tmp_path / 'xfer' / part) if f.endswith('.webp')
        ]
        assert size <= 0.01e6 or len(photos) == 1, (part, size)
    back = tmp_path / 'back'
    rc, out = _tool('unpack', tmp_path / 'xfer', back / 'camvid', back / 'emb')
    assert rc == 0 and 'every one equal to its original pixel for pixel' \
        in out, out[-2000:]
    assert _files(back / 'camvid') == _files(root)
    for rel in _files(root):
        if not rel.endswith('.png'):  # the split files: byte for byte
            assert open(osp.join(root, rel), 'rb').read() == \
                open(back / 'camvid' / rel, 'rb').read()
            continue
        want = cv2.imread(osp.join(root, rel), cv2.IMREAD_UNCHANGED)
        got = cv2.imread(str(back / 'camvid' / rel), cv2.IMREAD_UNCHANGED)
        assert got.shape == want.shape and np.array_equal(got, want), rel
    assert open(back / 'emb' / 'emb.npz', 'rb').read() == \
        open(emb, 'rb').read()


def test_a_missing_or_changed_part_is_named(tmp_path):
    root = str(tmp_path / 'camvid')
    emb = _converted(root, np.random.default_rng(1), n=(2, 1))
    xfer = tmp_path / 'xfer'
    rc, out = _tool('pack', root, emb, xfer, '--part-mb', 0.001, 0.01)
    assert rc == 0, out[-2000:]
    last = sorted(os.listdir(xfer))[-1]
    os.rename(xfer / last, tmp_path / 'held_back')
    args = ('unpack', xfer, tmp_path / 'b', tmp_path / 'e')
    rc, out = _tool(*args)
    assert rc == 1
    assert f"{xfer / last}'] not here: carry every part first" in out
    # a photograph changed on the way (one pixel) is found
    os.rename(tmp_path / 'held_back', xfer / last)
    photo = next(
        osp.join(d, f) for d, _, fs in os.walk(xfer) for f in fs
        if f.endswith('.webp'))
    img = cv2.imread(photo, cv2.IMREAD_UNCHANGED)
    img[0, 0, 0] ^= 1
    cv2.imwrite(photo, img, [cv2.IMWRITE_WEBP_QUALITY, 101])
    rc, out = _tool(*args)
    assert rc == 1
    assert '1 photographs differ from the originals' in out


def test_pack_replaces_only_an_earlier_pack(tmp_path):
    root = str(tmp_path / 'camvid')
    emb = _converted(root, np.random.default_rng(3), n=(1, 1))
    before = _files(root)
    rc, out = _tool('pack', root, emb, root)  # onto the data set itself
    assert rc == 1 and f'{root} exists and is not an earlier pack' in out
    assert _files(root) == before
    xfer = tmp_path / 'xfer'
    assert _tool('pack', root, emb, xfer)[0] == 0
    (xfer / 'part0' / 'stale').write_text('')
    assert _tool('pack', root, emb, xfer)[0] == 0  # an earlier pack: redone
    assert not (xfer / 'part0' / 'stale').exists()
