# Paper Table 3 on the toy (after transfer): absolute positional encoding
# interpolated from the training feature-map size (64 / 8 = 8).
_base_ = ['../sign_toy_transfer-only.py']
model = dict(neck=dict(pe_type='absolute_interp', train_size=(8, 8)))
