"""What a zero-shot dataset checks in its pipeline and files: mmseg's
label loaders swapped for checked ones, random transforms recognised (a
training pipeline), an image's size read from its header."""
import io
import os
import os.path as osp

import mmengine.fileio as fileio

from .transforms.zero_shot import checked_load_annotations


def _swap_loaders(pipeline, dataset) -> list:
    """Put :class:`CheckedLoadAnnotations` in place of every mmseg
    ``LoadAnnotations`` of ``pipeline`` (nested ``Compose``, ``TestTimeAug``
    ...); refuse one whose ``reduce_zero_label`` contradicts the dataset's.
    Returns the label loaders."""
    from mmseg.datasets.transforms import LoadAnnotations
    found = []

    def visit(container):
        items = container if isinstance(container, list) else None
        if items is None:
            return
        for i, t in enumerate(items):
            if isinstance(t, LoadAnnotations):
                given = t.reduce_zero_label
                have = getattr(dataset, 'reduce_zero_label', False)
                if given is not None and bool(given) != bool(have):
                    raise ValueError(
                        f'{type(dataset).__name__}: LoadAnnotations('
                        f'reduce_zero_label={given}) in the pipeline, but '
                        f'the dataset has reduce_zero_label={have}; set it '
                        'on the dataset only (LoadAnnotations takes the '
                        "dataset's).")
                items[i] = checked_load_annotations(t)
                found.append(items[i])
            for attr in ('transforms', 'subroutines'):
                inner = getattr(t, attr, None)
                if inner is not None:
                    visit(getattr(inner, 'transforms', inner))

    visit(pipeline.transforms)
    return found


#: Transforms that draw at random without ``Random`` in their name.
_RANDOM_TRANSFORMS = ('PhotoMetricDistortion', 'Albu',
                      'BioMedicalGaussianNoise', 'BioMedicalGaussianBlur')


def _draws_at_random(transform) -> bool:
    """Whether a (top-level) transform augments at random, i.e. belongs to
    a training pipeline."""
    cls = type(transform)
    return ('Random' in cls.__name__ or cls.__name__ in _RANDOM_TRANSFORMS
            or bool(getattr(cls, '_methods_with_randomness', None)))


def _image_size(info: dict, dataset):
    """``(h, w)`` of a data info's image from its header, or ``None`` when
    there is none or PIL cannot read it (missing, damaged, or a format only
    OpenCV reads: an ``OSError``): the label's size is then not compared
    here, and ``LoadImageFromFile`` reports an image it cannot read."""
    from PIL import Image
    path = info.get('img_path')
    if not path:
        return None
    try:
        with Image.open(
                io.BytesIO(
                    fileio.get(path, getattr(dataset, 'backend_args',
                                             None)))) as img:
            return img.size[1], img.size[0]
    except OSError:  # PIL's UnidentifiedImageError is one
        return None


def check_files_exist(dataset) -> None:
    """The split file and the image / label folders ``dataset`` reads
    exist (mmseg stops on a bare ``AssertionError`` or
    ``FileNotFoundError`` naming one path).

    Args:
        dataset (BaseSegDataset): a dataset with ``ZeroShotMixin`` (its
            ``HOW_TO_GET`` says how to get the data), prefixes joined.

    Raises:
        FileNotFoundError: naming what is missing, the data_root, how to
            get the data and how to point the config at it.
    """
    ann = getattr(dataset, 'ann_file', '')
    missing = [f'the split file {ann}'] if ann and not osp.isfile(ann) \
        else []
    missing += [
        f'the {key} folder {folder}'
        for key, folder in (dataset.data_prefix or {}).items()
        if key in ('img_path',
                   'seg_map_path') and folder and not osp.isdir(folder)
    ]
    if not missing:
        return
    root = dataset.data_root
    where = '' if root and osp.isabs(root) else \
        f'relative to {os.getcwd()}'
    what = (f'data_root {root!r} does not exist' +
            (f' ({where})' if where else '')
            if root and not osp.isdir(root) else ' and '.join(missing) +
            f' do{"es" if len(missing) == 1 else ""} not exist '
            f'(data_root={root!r}' + (f', {where}' if where else '') + ')')
    raise FileNotFoundError(
        f'{type(dataset).__name__}: {what}. ' + dataset.HOW_TO_GET +
        ' Or point the config at your copy: '
        '--cfg-options train_dataloader.dataset.data_root=DIR '
        'val_dataloader.dataset.data_root=DIR '
        'test_dataloader.dataset.data_root=DIR.')
