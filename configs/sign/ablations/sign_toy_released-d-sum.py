# A detail of the authors' release alone on the toy (after transfer): D's
# real and fake losses summed, not averaged (docs/reproduction.md).
_base_ = ['../sign_toy_transfer-only.py']
model = dict(decode_head=dict(adv_d_reduction='sum'))
