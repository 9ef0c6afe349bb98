# Ablation (paper Table 4): positional encoding 'relative'.
_base_ = ['../sign_voc.py']
model = dict(neck=dict(pe_type='relative'))
