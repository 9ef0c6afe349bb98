# Paper Table 2 on the toy (after transfer): attention-based SIM (B, CaGNet's).
_base_ = ['../sign_toy_transfer-only.py']
model = dict(neck=dict(arch='attention'))
