# Paper Table 3 on CamVid with ImageNet features: SIGN + AST
# (sign_lite0_camvid-480x360) without positional encoding, paired with it
# after transfer and after AST (docs/camvid.md).
_base_ = ['../sign_lite0_camvid-480x360.py']
model = dict(neck=dict(pe_type='none'))
