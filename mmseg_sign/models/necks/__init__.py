from .spatial_information_module import SpatialInformationModule

__all__ = ["SpatialInformationModule"]
