# A short iteration-based schedule for the toy data (CPU, minutes).
optim_wrapper = dict(
    type='OptimWrapper',
    optimizer=dict(type='SGD', lr=0.01, momentum=0.9, weight_decay=5e-4),
    clip_grad=None)
param_scheduler = [
    dict(
        type='PolyLR',
        eta_min=1e-4,
        power=0.9,
        begin=0,
        end=400,
        by_epoch=False)
]
train_cfg = dict(type='IterBasedTrainLoop', max_iters=400, val_interval=200)
val_cfg = dict(type='ValLoop')
test_cfg = dict(type='TestLoop')
default_hooks = dict(
    timer=dict(type='IterTimerHook'),
    logger=dict(type='LoggerHook', interval=20, log_metric_by_epoch=False),
    param_scheduler=dict(type='ParamSchedulerHook'),
    checkpoint=dict(type='CheckpointHook', by_epoch=False, interval=200),
    sampler_seed=dict(type='DistSamplerSeedHook'),
    visualization=dict(type='SegVisualizationHook', interval=5),
    # one split for the run (the training data's unseen pixels masked, the
    # metric's split checked) and one training run per work dir
    # (mmseg_sign/engine/hooks)
    sign_split=dict(type='ClassSplitHook'),
    sign_lock=dict(type='WorkDirLockHook'),
    # one seed, one start: weights initialised on the CPU, then moved
    # (init_on_cpu=False: mmengine's, on the run's device)
    sign_random=dict(type='RandomSourcesHook'))
