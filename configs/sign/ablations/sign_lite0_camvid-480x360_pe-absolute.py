# Paper Table 3 on CamVid with ImageNet features: SIGN + AST
# (sign_lite0_camvid-480x360) with absolute positional encoding (APE: the
# sinusoid of each feature pixel's index, so a 45x60 test map reads
# positions the 32x32 training crops never had) instead of RPE, paired with
# it after transfer and after AST (docs/camvid.md).
_base_ = ['../sign_lite0_camvid-480x360.py']
model = dict(neck=dict(pe_type='absolute'))
