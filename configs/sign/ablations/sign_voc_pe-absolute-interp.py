# Ablation (paper Table 4): absolute PE computed for the training feature map
# (368 / 8 = 46) and resized bilinearly to larger test maps.
_base_ = ['../sign_voc.py']
model = dict(neck=dict(pe_type='absolute_interp', train_size=(46, 46)))
