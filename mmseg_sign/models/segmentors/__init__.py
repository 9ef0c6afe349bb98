from .zero_shot_encoder_decoder import ZeroShotEncoderDecoder

__all__ = ["ZeroShotEncoderDecoder"]
