# CaGNet (Gu et al., ACM MM 2020; Table 1) on CamVid (docs/camvid.md): SIGN
# without its spatial information, i.e. the contextual module (the SIM's
# attention architecture, paper Table 2 (B)) and no positional encoding,
# feeding the latent code of G; G with MMD + adversarial losses, C and D on
# one trunk, train 2000 + transfer 400
# (configs/sign/sign_camvid_transfer-only.py).
_base_ = ['../sign/sign_camvid_transfer-only.py']
model = dict(neck=dict(arch='attention', pe_type='none'))
