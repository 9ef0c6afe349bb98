from .sign_head import SIGNHead

__all__ = ["SIGNHead"]
