"""Python entry points, as ``mmseg.apis``: add classes by name to a trained
SIGN model (``add_classes``) and write the result (``save_grown``)."""
from .add_classes import REFIT_MODES, add_classes, save_grown
from .outputs import AddClassesError

__all__ = ['add_classes', 'save_grown', 'AddClassesError', 'REFIT_MODES']
