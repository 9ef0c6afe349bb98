# SIGN's two-stage plan and optimizers (the authors' recipe, as in
# configs/sign/sign_voc.py): 40k iterations of training (E, SIM; C + D; G)
# then 6k of feature-generator transfer. Pair it with a SIGN model base, a
# dataset base and mmseg::_base_/default_runtime.py (configs/sign/
# sign_ade20k.py). Needs `custom_imports = dict(imports=['mmseg_sign'])`.
# The stage plan (train_cfg.stages) is the one home of the iteration
# counts: the training loop (StagePlanTrainLoop) runs as long as it, switches
# the stages and makes each optimizer's schedulers span the stage that steps
# it, so a child config (or --cfg-options train_cfg.stages.0.iters=N)
# changes only the plan.
# Precision: train with `tools/train.py CONFIG --amp --amp-dtype bfloat16` on
# a GPU with bfloat16 (Ampere or newer): about 1.5x faster and 40 % less
# memory than fp32 on an H100 (docs/benchmark.md, float16 figures), no loss
# scale to tune (bfloat16 has float32's range), and the terms half precision
# loses (KL, MMD, AST weights) run in float32. Plain `--amp` (float16 with a
# loss scale per optimizer) on older GPUs. On a CPU, fp32 unless it has
# bfloat16 kernels (AVX-512 / AMX). The toy's fp32 / bf16 / fp16 parity:
# docs/toy_results.md ("Mixed precision").
train_iters, transfer_iters = 40000, 6000
# the self-training stage that the + ST / + AST configs append (read there
# as _base_.self_train_iters; the authors' VOC length)
self_train_iters = 6000
train_cfg = dict(
    type='StagePlanTrainLoop',
    stages=[
        dict(name='train', iters=train_iters),
        dict(name='transfer', iters=transfer_iters, mode='alternate'),
    ],
    val_interval=4000)  # and at every stage end

# Segmentor (E, SIM): SGD 2.5e-4, poly; 10x ASPP weights, 20x ASPP biases
# (no weight decay), 5x SIM encoder and reparameterisation module.
# D (+ C on the shared trunk): Adam 2.5e-4; G: Adam 2e-4; both x0.71 every
# 5k iterations from 10k. Transfer: Adam 5e-5 for C + D and for G, x0.1
# every 1k from 3k. Self-training (the train stage's update on pseudo labels,
# CaGNet's configs_st_voc.yaml): E, SIM SGD 5e-5 poly; D (+ C) Adam 1e-4;
# G Adam 5e-5. Every Adam has torch's default betas (0.9, 0.999), as the
# released trainer builds them.
segmentor_paramwise = dict(
    custom_keys={
        'neck.input_proj': dict(lr_mult=10.0),
        **{
            f'neck.input_proj.{i}.conv.bias': dict(
                lr_mult=20.0, decay_mult=0.0)
            for i in range(4)
        },
        'neck.encoder': dict(lr_mult=5.0),
        'neck.reparam': dict(lr_mult=5.0),
    })
classifier_modules = ['decode_head.trunk', 'decode_head.conv_seg']
optim_wrapper = dict(
    constructor='ModuleGroupOptimWrapperConstructor',
    type='OptimWrapper',  # 'AmpOptimWrapper' (--amp): every entry in AMP
    segmentor=dict(
        optimizer=dict(type='SGD', lr=2.5e-4, momentum=0.9, weight_decay=5e-4),
        modules=['backbone', 'neck'],
        paramwise_cfg=segmentor_paramwise),
    generator=dict(
        optimizer=dict(type='Adam', lr=2e-4),
        modules=['decode_head.generator']),
    discriminator=dict(
        optimizer=dict(type='Adam', lr=2.5e-4, weight_decay=5e-4),
        modules=['decode_head.discriminator', *classifier_modules]),
    transfer=dict(
        optimizer=dict(type='Adam', lr=5e-5, weight_decay=5e-4),
        modules=['decode_head.discriminator', *classifier_modules]),
    transfer_generator=dict(
        optimizer=dict(type='Adam', lr=5e-5),
        modules=['decode_head.generator']),
    self_train=dict(
        optimizer=dict(type='SGD', lr=5e-5, momentum=0.9, weight_decay=5e-4),
        modules=['backbone', 'neck'],
        paramwise_cfg=segmentor_paramwise),
    self_train_generator=dict(
        optimizer=dict(type='Adam', lr=5e-5),
        modules=['decode_head.generator']),
    self_train_discriminator=dict(
        optimizer=dict(type='Adam', lr=1e-4, weight_decay=5e-4),
        modules=['decode_head.discriminator', *classifier_modules]))
# begin / end below are the VOC plan's; the loop re-targets them to
# the stage of each wrapper (milestones count from the stage start)
train_gan_decay = [
    dict(
        type='MultiStepLR',
        gamma=0.71,
        by_epoch=False,
        begin=0,
        end=train_iters,
        milestones=list(range(10000, train_iters, 5000)))
]
transfer_decay = [
    dict(
        type='MultiStepLR',
        gamma=0.1,
        by_epoch=False,
        begin=train_iters,
        end=train_iters + transfer_iters,
        milestones=[3000, 4000, 5000])
]
param_scheduler = dict(
    segmentor=[
        dict(
            type='PolyLR',
            power=0.9,
            eta_min=0.0,
            begin=0,
            end=train_iters,
            by_epoch=False)
    ],
    generator=train_gan_decay,
    discriminator=train_gan_decay,
    transfer=transfer_decay,
    transfer_generator=transfer_decay,
    self_train=[  # used by the *_st / *_ast plans
        dict(type='PolyLR', power=0.9, eta_min=0.0, by_epoch=False)
    ],
    self_train_generator=[],
    self_train_discriminator=[])

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
        type='CheckpointHook', by_epoch=False, interval=2000, save_last=True),
    sampler_seed=dict(type='DistSamplerSeedHook'),
    visualization=dict(type='SegVisualizationHook'),
    # SIGN's companions of StagePlanTrainLoop (mmseg_sign/engine/hooks): one
    # seen/unseen split for the run, --resume / load_from checks, the
    # self-training teacher in checkpoints, a dry run of the first sample
    sign_split=dict(type='ClassSplitHook'),
    sign_resume=dict(type='ResumeCheckHook'),
    sign_teacher=dict(type='SelfTrainingTeacherHook'),
    sign_dry_run=dict(type='DryRunHook'),
    # one training run per work dir, whatever starts it
    sign_lock=dict(type='WorkDirLockHook'),
    # one seed, one start: weights initialised on the CPU, then moved
    # (init_on_cpu=False: mmengine's, on the run's device)
    sign_random=dict(type='RandomSourcesHook'))
