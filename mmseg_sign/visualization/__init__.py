"""Pictures of runs (matplotlib, imported on use: not by ``import
mmseg_sign``)."""
