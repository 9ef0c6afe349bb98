from .efficientnet_lite import EfficientNetLite
from .efficientnet_lite_weights import convert_efficientnet_lite

__all__ = ['EfficientNetLite', 'convert_efficientnet_lite']
