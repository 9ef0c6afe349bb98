# CaGNet (Gu et al., ACM MM 2020) on Pascal VOC, DeepLab-v2 R101: SIGN's
# configs/sign/sign_voc.py (whose recipe is CaGNet's released configs)
# without spatial information: the contextual module (the SIM's attention
# architecture, paper Table 2 (B)), no positional encoding.
_base_ = ['../sign/sign_voc.py']
model = dict(neck=dict(arch='attention', pe_type='none'))
