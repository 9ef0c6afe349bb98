"""Class weights from a dataset's label frequencies (docs/camvid.md)."""
import numpy as np

#: ENet's constant (Paszke et al., "ENet", 2016, section 5.2): a class with
#: pixel share p weighs 1 / ln(c + p), bounded by 1 / ln(c) ≈ 50.5
ENET_C = 1.02


def label_counts(dataset) -> np.ndarray:
    """``[K]`` pixel counts of each class over a segmentation dataset's
    label maps, as its ``LoadAnnotations`` reads them (the dataset's
    ``label_map`` applied; ignored pixels left out).

    Args:
        dataset (BaseSegDataset): built with a pipeline that loads the
            annotations (the pipeline is not run; only ``LoadAnnotations``).

    Returns:
        np.ndarray: int64 counts, one per class of ``dataset.metainfo``.
    """
    from mmseg.datasets.transforms import LoadAnnotations
    num_classes = len(dataset.metainfo['classes'])
    load = LoadAnnotations()
    counts = np.zeros(num_classes, np.int64)
    for i in range(len(dataset)):
        info = load(dict(dataset.get_data_info(i)))
        label = info['gt_seg_map']
        label = label[label < num_classes]
        counts += np.bincount(label.ravel(), minlength=num_classes)
    return counts


def enet_class_weights(counts: np.ndarray, c: float = ENET_C) -> np.ndarray:
    """``w_k = 1 / ln(c + p_k)`` with ``p_k`` class k's pixel share, scaled
    to mean 1 (so that the loss keeps its size). A class without pixels
    gets the bound ``1 / ln(c)``.

    Args:
        counts (np.ndarray): ``[K]`` pixel counts.
        c (float): ENet's constant.

    Returns:
        np.ndarray: ``[K]`` float64 weights, mean 1.
    """
    counts = np.asarray(counts, np.float64)
    if counts.sum() <= 0:
        raise ValueError('no labelled pixel: no class frequencies')
    weights = 1.0 / np.log(c + counts / counts.sum())
    return weights / weights.mean()
