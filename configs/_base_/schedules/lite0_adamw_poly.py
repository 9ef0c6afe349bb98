# The optimizer recipe of every EfficientNet-Lite0 config (its one home),
# chosen for the supervised ceiling on held-out CamVid training photographs
# (docs/camvid.md, "Choosing the recipe on held-out training photographs"):
# AdamW 1e-3, weight decay 0.01, the pretrained backbone at a tenth of that
# rate, poly (power 0.9) to 1e-4 over the run's iterations. A config
# inherits this file and reads the three parts:
#   optimizer=dict(_base_.lite0_optimizer, _delete_=True),
#   paramwise_cfg=dict(_base_.lite0_paramwise_cfg, _delete_=True),
#   param_scheduler=[dict(_base_.lite0_poly, end=ITERS)]
# (these three keys compose the others: a run's key, tools/toy_table.py,
# leaves them out, mmseg_sign/analysis/toy_results.py COMPOSITION_KEYS)
lite0_optimizer = dict(
    type='AdamW', lr=1e-3, betas=(0.9, 0.999), weight_decay=0.01)
lite0_paramwise_cfg = dict(custom_keys={'backbone': dict(lr_mult=0.1)})
lite0_poly = dict(
    type='PolyLR', power=0.9, eta_min=1e-4, begin=0, end=None, by_epoch=False)
