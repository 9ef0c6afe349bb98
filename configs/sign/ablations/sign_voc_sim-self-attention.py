# Ablation (paper Table 3): SIM architecture 'self_attention'.
_base_ = ['../sign_voc.py']
model = dict(neck=dict(arch='self_attention'))
