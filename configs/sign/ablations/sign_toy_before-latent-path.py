# The project's earlier choice alone on the toy (after transfer): F_x does
# not depend on z (z_modulation=False), so mu and logvar learn from the KL
# term alone.
_base_ = ['../sign_toy_transfer-only.py']
model = dict(neck=dict(z_modulation=False))
