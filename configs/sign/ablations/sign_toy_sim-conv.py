# Paper Table 2 on the toy (after transfer): convolution-based SIM (A).
_base_ = ['../sign_toy_transfer-only.py']
model = dict(neck=dict(arch='conv'))
