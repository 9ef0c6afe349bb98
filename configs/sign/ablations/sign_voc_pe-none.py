# Ablation (paper Table 4): positional encoding 'none'.
_base_ = ['../sign_voc.py']
model = dict(neck=dict(pe_type='none'))
