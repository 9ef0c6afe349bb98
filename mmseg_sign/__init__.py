"""mmseg-sign: SIGN generalized zero-shot segmentation for MMSegmentation.

Importing the package registers its datasets, transforms, metric, models and
hooks into mmseg's registries; configs use
``custom_imports=dict(imports=['mmseg_sign'], allow_failed_imports=False)``.
"""
import warnings

from mmengine.config.utils import MODULE2PACKAGE

from .utils import register_checkpoint_safe_globals
from .utils.atomic import register_atomic_local_backend
from .version import __version__

# mmengine's `is_installed` reloads pkg_resources for every `mmseg::` base
# a config reads, and the setuptools mmengine 0.10 needs (< 81) warns that
# pkg_resources is deprecated at each reload (dozens of copies in a
# campaign's log; 'once' does not hold them back: each reload changes the
# filters, which resets the registry 'once' keeps). Nothing a user can do
# about it (scripts/install.sh pins setuptools < 81 for mmengine), so it
# is dropped.
warnings.filterwarnings(
    'ignore', message='pkg_resources is deprecated', category=UserWarning)
register_checkpoint_safe_globals()
register_atomic_local_backend()  # checkpoints written atomically
# `_base_ = ['mmseg_sign::sign/sign_voc.py']`: mmengine looks the package up
# by this name. A module of the package rather than the distribution name:
# its directory is the package's in a wheel and in an editable install alike
# (where the configs are linked under mmseg_sign/.mim by setup.py).
MODULE2PACKAGE.setdefault('mmseg_sign', 'mmseg_sign.version')

# isort: off
# the registries' modules, then the APIs that use them
from . import datasets, embeddings, engine, evaluation  # noqa: E402,F401
from . import models, registry  # noqa: E402,F401
from . import apis  # noqa: E402,F401
# isort: on

__all__ = ['__version__']
