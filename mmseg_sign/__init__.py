"""mmseg-sign: SIGN generalized zero-shot segmentation for MMSegmentation.

Importing the package registers its datasets, transforms, metric, models and
hooks into mmseg's registries; configs use
``custom_imports=dict(imports=['mmseg_sign'], allow_failed_imports=False)``.
"""
from .utils import register_checkpoint_safe_globals
from .version import __version__

register_checkpoint_safe_globals()

from . import datasets, embeddings, engine, evaluation, models  # noqa: E402,F401,E501

__all__ = ['__version__']
