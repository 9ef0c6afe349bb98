from .deeplabv2_aspp import DeepLabV2ASPP
from .input_projections import MLPFusion, build_input_proj, takes_levels
from .noise_prior_neck import NoisePriorNeck
from .spatial_information_module import SpatialInformationModule

__all__ = [
    'DeepLabV2ASPP', 'MLPFusion', 'NoisePriorNeck', 'SpatialInformationModule',
    'build_input_proj', 'takes_levels'
]
