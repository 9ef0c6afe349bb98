from .gzsl_iou_metric import GZSLIoUMetric, harmonic_mean

__all__ = ["GZSLIoUMetric", "harmonic_mean"]
