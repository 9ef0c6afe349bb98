# SPNet's schedule on DeepLab-v2 (SPNet trains one network, one optimizer):
# SGD 2.5e-4, momentum 0.9, weight decay 5e-4, poly 0.9, the projection at
# DeepLab-v2's classifier multipliers (10x weights, 20x biases without decay),
# the learning rate and multipliers of SIGN's segmentor (sign_40k_6k.py, from
# CaGNet's configs). 46k iterations: as many as SIGN's train + transfer
# stages, so SPNet's network trains as long as SIGN's longest-trained part
# (the choice that helps the baseline; docs/reproduction.md, "Baselines").
iters = 46000
optim_wrapper = dict(
    # mmengine's constructor; mmseg's --amp also on a CPU (engine/optimizers)
    constructor='AnyDeviceOptimWrapperConstructor',
    type='OptimWrapper',
    optimizer=dict(type='SGD', lr=2.5e-4, momentum=0.9, weight_decay=5e-4),
    paramwise_cfg=dict(
        custom_keys={
            'decode_head.projection': dict(lr_mult=10.0),
            **{
                f'decode_head.projection.{i}.conv.bias': dict(
                    lr_mult=20.0, decay_mult=0.0)
                for i in range(4)
            },
        }))
param_scheduler = [
    dict(
        type='PolyLR',
        power=0.9,
        eta_min=0.0,
        begin=0,
        end=iters,
        by_epoch=False)
]
train_cfg = dict(type='IterBasedTrainLoop', max_iters=iters, val_interval=4000)
# mmengine's Runner that never dumps the config over the config file
# (engine/runner/config_guard_runner.py; mmseg's tools/train.py builds it)
runner_type = 'ConfigGuardRunner'
val_cfg = dict(type='ValLoop')
test_cfg = dict(type='TestLoop')
custom_hooks = [dict(type='TorchRNGStateHook')]
default_hooks = dict(
    timer=dict(type='IterTimerHook'),
    logger=dict(type='LoggerHook', interval=50, log_metric_by_epoch=False),
    param_scheduler=dict(type='ParamSchedulerHook'),
    checkpoint=dict(
        type='CheckpointHook', by_epoch=False, interval=4000, save_last=True),
    sampler_seed=dict(type='DistSamplerSeedHook'),
    visualization=dict(type='SegVisualizationHook'),
    # the split for the head and the metric, and the first-sample dry run
    # (mmseg_sign/engine/hooks)
    sign_split=dict(type='ClassSplitHook'),
    sign_resume=dict(type='ResumeCheckHook'),  # --resume / load_from checks
    sign_dry_run=dict(type='DryRunHook'),
    # one training run per work dir, whatever starts it
    sign_lock=dict(type='WorkDirLockHook'),
    # one seed, one start: weights initialised on the CPU, then moved
    # (init_on_cpu=False: mmengine's, on the run's device)
    sign_random=dict(type='RandomSourcesHook'))
