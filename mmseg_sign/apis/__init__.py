"""Python entry points, as ``mmseg.apis``: add classes by name to a trained
SIGN model (``add_classes``) and write the result (``save_grown``); build a
model from a checkpoint that must fit it (``init_model_checked``)."""
from .add_classes import REFIT_MODES, add_classes, save_grown
from .inference import init_model_checked
from .outputs import AddClassesError

__all__ = [
    'add_classes', 'save_grown', 'AddClassesError', 'REFIT_MODES',
    'init_model_checked'
]
