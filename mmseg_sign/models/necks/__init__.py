from .deeplabv2_aspp import DeepLabV2ASPP
from .noise_prior_neck import NoisePriorNeck
from .spatial_information_module import SpatialInformationModule

__all__ = ['DeepLabV2ASPP', 'NoisePriorNeck', 'SpatialInformationModule']
