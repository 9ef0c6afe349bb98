"""Carry the converted CamVid to a GPU machine in parts, pixel for pixel.

A device call carries at most 64 MiB with the working tree, and the
converted 480x360 CamVid (train + val photographs, 123 MB as PNG) does not
fit one call beside the wheels (docs/gpu.md). ``pack`` re-encodes the
photographs as lossless WebP (71 % of the PNG bytes) and splits everything
into parts of at most ``--part-mb`` MB; ``unpack`` (on the GPU machine,
after the calls that carried the parts) writes them back as PNG into the
converted layout and checks every decoded image against the MD5 of the
original's pixels (``manifest.json``), so the runs there read the same
arrays as the runs here::

    python tools/analysis/camvid_transport.py pack data/camvid_480x360 \\
        data/embeddings/camvid10_cagnet_fasttext_word2vec.npz .gpu/xfer \\
        --part-mb 2.5 58 60
    # part 0 rides with the wheels; parts 1, 2 in the next warm calls
    python3 tools/analysis/camvid_transport.py unpack .gpu/xfer \\
        data/camvid_480x360 data/embeddings

Parts are folders ``OUT/part0, part1, ...`` (the last size repeats).
"""
import argparse
import hashlib
import json
import os
import os.path as osp
import shutil
import sys
from concurrent.futures import ProcessPoolExecutor

import cv2
import numpy as np

SPLITS = ('train', 'val')


def pixel_md5(img: np.ndarray) -> str:
    return hashlib.md5(
        np.ascontiguousarray(img).tobytes() +
        str(img.shape).encode()).hexdigest()


def _encode(src):
    img = cv2.imread(src, cv2.IMREAD_UNCHANGED)
    ok, buf = cv2.imencode('.webp', img, [cv2.IMWRITE_WEBP_QUALITY, 101])
    assert ok, src
    back = cv2.imdecode(buf, cv2.IMREAD_UNCHANGED)
    if back.shape != img.shape or not np.array_equal(back, img):
        raise RuntimeError(f'{src}: lossless WebP does not round-trip')
    return pixel_md5(img), buf.tobytes()


def pack(root, embeddings, out, part_mb):
    if osp.exists(out):  # replaced only if an earlier pack wrote it
        if not osp.isfile(osp.join(out, 'part0', 'manifest.json')):
            sys.exit(f'error: {out} exists and is not an earlier pack '
                     '(no part0/manifest.json): nothing was written; give '
                     'a new folder')
        shutil.rmtree(out)
    # small files first (annotations, splits, embeddings), then photographs
    items = []  # (relative path in the part, bytes, md5 or None)
    for split in SPLITS:
        d = osp.join(root, 'ann_dir', split)
        for name in sorted(os.listdir(d)):
            with open(osp.join(d, name), 'rb') as f:
                items.append((f'ann_dir/{split}/{name}', f.read(), None))
    for name in sorted(os.listdir(osp.join(root, 'splits'))):
        with open(osp.join(root, 'splits', name), 'rb') as f:
            items.append((f'splits/{name}', f.read(), None))
    with open(embeddings, 'rb') as f:
        items.append(
            (f'embeddings/{osp.basename(embeddings)}', f.read(), None))
    photos = [(split, name) for split in SPLITS
              for name in sorted(os.listdir(osp.join(root, 'img_dir', split)))]
    with ProcessPoolExecutor() as pool:
        coded = pool.map(
            _encode, [osp.join(root, 'img_dir', s, n) for s, n in photos],
            chunksize=8)
        manifest = {}
        for (split, name), (md5, data) in zip(photos, coded):
            rel = f'img_dir/{split}/{osp.splitext(name)[0]}.webp'
            manifest[f'img_dir/{split}/{name}'] = md5
            items.append((rel, data, md5))
    part, used, sizes = 0, 0, []
    limit = lambda p: part_mb[min(p, len(part_mb) - 1)] * 1e6  # noqa: E731
    for rel, data, _ in items:
        if used and used + len(data) > limit(part):
            sizes.append(used)
            part, used = part + 1, 0
        path = osp.join(out, f'part{part}', rel)
        os.makedirs(osp.dirname(path), exist_ok=True)
        with open(path, 'wb') as f:
            f.write(data)
        used += len(data)
    sizes.append(used)
    with open(osp.join(out, 'part0', 'manifest.json'), 'w') as f:
        json.dump({'parts': len(sizes), 'photographs': manifest}, f)
    for i, s in enumerate(sizes):
        print(f'{out}/part{i}: {s / 1e6:.1f} MB')


def _decode(args):
    src, dst, md5 = args
    img = cv2.imread(src, cv2.IMREAD_UNCHANGED)
    if img is None or pixel_md5(img) != md5:
        return dst
    cv2.imwrite(dst, img)
    back = cv2.imread(dst, cv2.IMREAD_UNCHANGED)
    return None if pixel_md5(back) == md5 else dst


def unpack(src, root, embeddings_dir):
    with open(osp.join(src, 'part0', 'manifest.json')) as f:
        manifest = json.load(f)
    parts = [osp.join(src, f'part{i}') for i in range(manifest['parts'])]
    missing = [p for p in parts if not osp.isdir(p)]
    if missing:
        sys.exit(f'error: {missing} not here: carry every part first')
    jobs = []
    for part in parts:
        for dirpath, _, files in os.walk(part):
            for name in files:
                path = osp.join(dirpath, name)
                rel = osp.relpath(path, part)
                if rel == 'manifest.json':
                    continue
                if rel.startswith('embeddings/'):
                    dst = osp.join(embeddings_dir, name)
                elif rel.startswith('img_dir/'):
                    key = osp.splitext(rel)[0] + '.png'
                    dst = osp.join(root, key)
                    jobs.append((path, dst, manifest['photographs'][key]))
                    os.makedirs(osp.dirname(dst), exist_ok=True)
                    continue
                else:
                    dst = osp.join(root, rel)
                os.makedirs(osp.dirname(dst), exist_ok=True)
                shutil.copyfile(path, dst)
    if len(jobs) != len(manifest['photographs']):
        sys.exit(f'error: {len(jobs)} photographs carried, the manifest '
                 f'lists {len(manifest["photographs"])}')
    with ProcessPoolExecutor() as pool:
        bad = [d for d in pool.map(_decode, jobs, chunksize=8) if d]
    if bad:
        sys.exit(f'error: {len(bad)} photographs differ from the '
                 f'originals, e.g. {bad[:3]}')
    print(f'{len(jobs)} photographs written to {root}, every one equal to '
          'its original pixel for pixel')


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    sub = parser.add_subparsers(dest='cmd', required=True)
    p = sub.add_parser('pack')
    p.add_argument('root')
    p.add_argument('embeddings')
    p.add_argument('out')
    p.add_argument('--part-mb', type=float, nargs='+', default=[60])
    u = sub.add_parser('unpack')
    u.add_argument('src')
    u.add_argument('root')
    u.add_argument('embeddings_dir')
    args = parser.parse_args()
    if args.cmd == 'pack':
        pack(args.root, args.embeddings, args.out, args.part_mb)
    else:
        unpack(args.src, args.root, args.embeddings_dir)


if __name__ == '__main__':
    main()
