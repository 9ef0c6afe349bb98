# A detail of the authors' release alone on the toy (after transfer): the
# MMD as sqrt(½·MMD²) per class (docs/reproduction.md).
_base_ = ['../sign_toy_transfer-only.py']
model = dict(decode_head=dict(mmd_estimator='released'))
