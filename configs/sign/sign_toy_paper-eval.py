# The toy analogue of sign_voc_paper-eval.py: score a toy checkpoint the way
# the paper's Table 1 is scored (see that config), at the toy's scale.
#
#   python tools/test.py configs/sign/sign_toy_paper-eval.py CHECKPOINT
#
# The toy images are 64-96 px (the paper's ~500 px), so they are warped to
# 65x65 instead of 513x513; the toy ResNet-18 has the same output stride 8, so
# its logits are 9x9 = ceil(65 / 8) and the label is resized (nearest) to 9x9
# and scored there. 65 = 8 * 8 + 1, like 513 = 8 * 64 + 1, keeps mmseg's
# 9 -> 65 -> 9 logit resizing (align_corners=True) exactly the identity.
# CHECKPOINT may come from sign_toy.py, sign_toy_st.py or
# sign_toy_transfer-only.py (same model).
_base_ = ['./sign_toy.py']

test_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='LoadAnnotations'),
    dict(type='PaperEvalResize', scale=65, output_stride=8),
    dict(type='CheckSegLabels'),
    dict(type='PackSegInputs'),
]
val_dataloader = dict(dataset=dict(pipeline=test_pipeline))
test_dataloader = val_dataloader
model = dict(decode_head=dict(align_corners=True))
