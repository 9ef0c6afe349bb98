# A detail of the authors' release alone on the toy (after transfer): the
# context gates sigmoid(ReLU(conv)) with bias-free convs
# (docs/reproduction.md).
_base_ = ['../sign_toy_transfer-only.py']
model = dict(neck=dict(released_gates=True))
