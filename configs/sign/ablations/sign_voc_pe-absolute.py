# Ablation (paper Table 4): positional encoding 'absolute'.
_base_ = ['../sign_voc.py']
model = dict(neck=dict(pe_type='absolute'))
