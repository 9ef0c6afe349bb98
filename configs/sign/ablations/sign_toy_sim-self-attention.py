# Paper Table 2 on the toy (after transfer): self-attention SIM (C, one head).
_base_ = ['../sign_toy_transfer-only.py']
model = dict(neck=dict(arch='self_attention'))
