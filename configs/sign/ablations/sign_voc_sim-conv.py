# Ablation (paper Table 3): SIM architecture 'conv'.
_base_ = ['../sign_voc.py']
model = dict(neck=dict(arch='conv'))
