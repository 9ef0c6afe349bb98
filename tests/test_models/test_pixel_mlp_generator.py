"""ZS3Net's generator (a GMMN, ``PixelMLPGenerator``) learns from the MMD
alone: with ``adversarial=False`` the head has no D, no adversarial term
is computed, and D's optimizer wrapper trains C."""
from mmseg.registry import MODELS, OPTIM_WRAPPER_CONSTRUCTORS
from model_utils import batch, changed, tiny_model


def test_zs3net_generator_learns_from_the_mmd_alone(embedding_table):
    path, _ = embedding_table
    model = tiny_model(path, classifier='shared_trunk')
    model.neck = MODELS.build(
        dict(
            type='NoisePriorNeck',
            in_channels=32,
            channels=8,
            dilations=(1, 2)))
    model.decode_head = MODELS.build(
        dict(
            type='SIGNHead',
            in_channels=8,
            channels=8,
            num_classes=5,
            class_embeddings=path,
            latent_channels=8,
            generator_hidden=(16, ),
            generator_dropout=0.0,
            trunk_channels=16,
            gen_unseen_rate=2,
            unseen_classes=['c3', 'c4'],
            adversarial=False))
    head = model.decode_head
    assert head.discriminator is None
    # as zs3net_toy.py: SIGN's wrapper of D + C; with no D it trains C
    wrappers = OPTIM_WRAPPER_CONSTRUCTORS.build(
        dict(
            type='ModuleGroupOptimWrapperConstructor',
            optim_wrapper_cfg=dict(
                segmentor=dict(
                    optimizer=dict(type='SGD', lr=0.1),
                    modules=['backbone', 'neck']),
                generator=dict(
                    optimizer=dict(type='Adam', lr=1e-2),
                    modules=['decode_head.generator']),
                discriminator=dict(
                    optimizer=dict(type='Adam', lr=1e-2),
                    modules=[
                        'decode_head.discriminator', 'decode_head.trunk',
                        'decode_head.conv_seg'
                    ]))))(
                        model)
    model.set_stage('train')
    model.train()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    log_vars = model.train_step(batch(), wrappers)
    # no adversarial term anywhere; the KL of a noise latent is 0
    assert not [k for k in log_vars if 'adv' in k]
    assert {'loss_mmd', 'loss_ce', 'loss_ce_d'} <= set(log_vars)
    assert log_vars['loss_kld'].item() == 0
    moved = changed(before, model.state_dict())
    assert any(k.startswith('decode_head.generator.') for k in moved)
    assert any(k.startswith('decode_head.conv_seg.') for k in moved)
