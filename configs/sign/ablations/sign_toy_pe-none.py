# Paper Table 3 on the toy (after transfer): no positional encoding.
_base_ = ['../sign_toy_transfer-only.py']
model = dict(neck=dict(pe_type='none'))
