from .mixed_precision import (AMP_DTYPES, MixedPrecisionOptimWrapper,
                              check_amp_dtype, default_amp_dtype)

__all__ = [
    'AMP_DTYPES', 'MixedPrecisionOptimWrapper', 'check_amp_dtype',
    'default_amp_dtype'
]
