from .positional_encoding import PE_TYPES, positional_encoding_2d

__all__ = ['PE_TYPES', 'positional_encoding_2d']
