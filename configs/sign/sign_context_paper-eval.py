# Score a SIGN checkpoint on Pascal Context like the paper's Table 1 (the
# authors' test protocol): images warped to 513x513 (aspect ratio ignored),
# single scale, argmax of the 65x65 logits (output stride 8), no calibration;
# the ground truth resized (nearest) to 65x65 and scored there, one confusion
# matrix over the set (GZSLIoUMetric: seen / unseen / harmonic mIoU).
#
#   python tools/test.py configs/sign/sign_context_paper-eval.py CHECKPOINT
#
# CHECKPOINT may come from any Context config with this model (sign_context.py,
# _st, _ast): only the test pipeline and the head's align_corners change
# (align_corners=True makes mmseg's 65 -> 513 -> 65 logit resizing exactly the
# identity; it is not a weight). sign_context.py itself scores mmseg's way
# (keep-ratio resize to 512, predictions at full image resolution). --show-dir
# does not apply (predictions are 65x65); --out writes them.
_base_ = ['./sign_context.py']

test_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='LoadAnnotations'),
    # the authors' label path: nearest to 513x513 with the image, then to
    # 65x65 (label_via_warp=False: one nearest resize from the original)
    dict(
        type='PaperEvalResize',
        scale=513,
        output_stride=8,
        label_via_warp=True),
    dict(type='CheckSegLabels'),
    dict(type='PackSegInputs'),
]
val_dataloader = dict(dataset=dict(pipeline=test_pipeline))
test_dataloader = val_dataloader
model = dict(decode_head=dict(align_corners=True))
