from .deeplabv2_aspp import DeepLabV2ASPP
from .spatial_information_module import SpatialInformationModule

__all__ = ['DeepLabV2ASPP', 'SpatialInformationModule']
