"""Deployment: ONNX export of a trained model (no gensim needed)."""
from .onnx import ExportError, compare, export, load_model

__all__ = ['ExportError', 'compare', 'export', 'load_model']
