# Ablation (paper Table 3): SIM architecture 'attention'.
_base_ = ['../sign_voc.py']
model = dict(neck=dict(arch='attention'))
