from .positional_encoding import PE_TYPES, positional_encoding_2d
from .pseudo_labels import pseudo_label_image, top_p_mask

__all__ = [
    'PE_TYPES', 'positional_encoding_2d', 'pseudo_label_image', 'top_p_mask'
]
