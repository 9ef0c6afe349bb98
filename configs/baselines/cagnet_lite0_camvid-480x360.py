# CaGNet on CamVid with ImageNet features: SIGN without its spatial
# information (the SIM's attention architecture, no positional encoding;
# as cagnet_camvid.py), train 1200 + transfer 400.
_base_ = ['../sign/sign_lite0_camvid-480x360_transfer-only.py']
model = dict(neck=dict(arch='attention', pe_type='none'))
