"""ZeroShotEncoderDecoder: stage steps update exactly the right weights."""
import copy

import pytest
import torch
from mmengine.structures import PixelData
from mmseg.registry import MODELS, OPTIM_WRAPPER_CONSTRUCTORS
from model_utils import batch, changed, optim_wrappers, tiny_model


def groups(keys):
    out = set()
    for k in keys:
        if k.startswith('decode_head.'):
            out.add('.'.join(k.split('.')[:2]))
        else:
            out.add(k.split('.')[0])
    return out


C = {'decode_head.conv_seg'}
SHARED_C = {'decode_head.conv_seg', 'decode_head.trunk'}
G, D = {'decode_head.generator'}, {'decode_head.discriminator'}
E = {'backbone', 'neck'}


@pytest.mark.parametrize(
    'classifier, stage, opts, want, losses',
    [
        ('linear', 'train', {}, E | C | G | D,
         {'loss_ce', 'loss_kld', 'loss_mmd', 'loss_adv_g', 'loss_adv_d'}),
        ('shared_trunk', 'train', {}, E | SHARED_C | G | D, {
            'loss_ce', 'loss_kld', 'loss_mmd', 'loss_adv_g', 'loss_adv_d',
            'loss_ce_d'
        }),
        ('linear', 'transfer', dict(mode='classifier'), C,
         {'loss_ce', 'loss_ce_synth'}),
        ('shared_trunk', 'transfer', dict(mode='classifier'), SHARED_C,
         {'loss_ce', 'loss_ce_synth'}),
        # alternating transfer: block 1 trains G, D and C; block 2 C only
        ('shared_trunk', 'transfer', dict(mode='alternate',
                                          stage_iter=0), SHARED_C | G | D,
         {'loss_mmd', 'loss_adv_g', 'loss_adv_d', 'loss_ce', 'loss_ce_fake'}),
        ('shared_trunk', 'transfer', dict(
            mode='alternate', stage_iter=3), SHARED_C, {'loss_ce_synth'}),
        # latent='posterior': G fed the SIM's z of the batch's pixels
        ('shared_trunk', 'transfer',
         dict(mode='alternate', stage_iter=3,
              latent='posterior'), SHARED_C, {'loss_ce_synth'}),
        ('linear', 'transfer', dict(mode='classifier', latent='posterior'), C,
         {'loss_ce', 'loss_ce_synth'}),
        ('linear', 'transfer', dict(mode='alternate', stage_iter=0), C | G | D,
         {'loss_mmd', 'loss_adv_g', 'loss_adv_d', 'loss_ce', 'loss_ce_fake'}),
        # self-training as released: the train stage's update on pseudo labels
        ('linear', 'self_train', {}, E | C | G | D, {
            'loss_ce', 'loss_kld', 'loss_mmd', 'loss_adv_g', 'loss_adv_d',
            'st_pixels', 'st_weight', 'st_confidence', 'st_scale'
        }),
        ('shared_trunk', 'self_train', dict(mode='ST'), E | SHARED_C | G | D, {
            'loss_ce', 'loss_kld', 'loss_mmd', 'loss_adv_g', 'loss_adv_d',
            'loss_ce_d', 'st_pixels', 'st_weight', 'st_confidence', 'st_scale'
        }),
        ('shared_trunk', 'self_train', dict(synth_weight=0.5),
         E | SHARED_C | G | D, {
             'loss_ce', 'loss_kld', 'loss_mmd', 'loss_adv_g', 'loss_adv_d',
             'loss_ce_d', 'loss_ce_synth', 'st_pixels', 'st_weight',
             'st_scale', 'st_confidence'
         }),
        # the project's earlier self-training update: E, SIM, C only
        ('linear', 'self_train', dict(
            update='classifier', synth_weight=1.0), E | C, {
                'loss_ce_st', 'loss_ce_synth', 'st_pixels', 'st_weight',
                'st_scale', 'st_confidence'
            }),
        ('shared_trunk', 'self_train', dict(update='classifier'), E | SHARED_C,
         {'loss_ce_st', 'st_pixels', 'st_weight', 'st_confidence', 'st_scale'
          }),
    ])
def test_stage_updates_only_its_parameters(embedding_table, classifier, stage,
                                           opts, want, losses):
    torch.manual_seed(0)
    model = tiny_model(embedding_table[0], classifier)
    model.train()
    ow = optim_wrappers(model, opts.get('update', 'train'))
    opts = dict(opts)
    stage_iter = opts.pop('stage_iter', 0)
    if stage == 'transfer':
        opts['block_iters'] = 3
    model.set_stage(stage, **opts)
    model.stage_iter = stage_iter
    before = copy.deepcopy(model.state_dict())
    log_vars = model.train_step(batch(), ow)
    after = model.state_dict()
    assert groups(changed(before, after)) == want
    # the word-embedding mapping M never changes
    assert torch.equal(before['decode_head.class_embedding'],
                       after['decode_head.class_embedding'])
    for v in log_vars.values():
        assert torch.isfinite(v)
    assert set(log_vars) == losses | {'loss'} | ({'acc_seg'} if 'loss_kld'
                                                 in losses else set())
    torch.testing.assert_close(
        log_vars['loss'],
        sum(v for k, v in log_vars.items() if k.startswith('loss_')))
    if stage == 'self_train':
        assert log_vars['st_pixels'] > 0


@pytest.mark.parametrize('mode', ['ST', 'AST'])
def test_self_train_teacher_is_frozen_copy(embedding_table, mode):
    torch.manual_seed(0)
    model = tiny_model(embedding_table[0])
    model.train()
    ow = optim_wrappers(model)
    start = copy.deepcopy(model.state_dict())
    model.set_stage('self_train', mode=mode, temperature=2.0, top_p=50)
    teacher = model.teacher
    assert teacher is not None and not teacher.training
    # not a sub-module: neither in the student's state_dict nor parameters
    assert not any(k.startswith('teacher') for k in model.state_dict())
    assert all(not p.requires_grad for p in teacher.parameters())
    for _ in range(2):
        model.train_step(batch(), ow)
    t_state = teacher.state_dict()
    for key, value in start.items():
        assert torch.equal(t_state[key], value), key
    assert model.teacher is teacher  # kept for the whole stage
    assert changed(start, model.state_dict())
    model.set_stage('transfer')
    assert model.teacher is None


def test_paramwise_cfg_and_inference_path(embedding_table):
    model = tiny_model(embedding_table[0])
    ow = optim_wrappers(model)
    names = {id(p): n for n, p in model.named_parameters()}
    for group in ow['segmentor'].optimizer.param_groups:
        (param, ) = group['params']  # mmengine: one group per parameter
        want = 1.0 if names[id(param)].startswith('neck.') else 0.1
        assert group['lr'] == pytest.approx(want), names[id(param)]
    trained = {
        names[id(p)].split('.')[0]
        for g in ow['segmentor'].optimizer.param_groups for p in g['params']
    }
    assert trained == {'backbone', 'neck', 'decode_head'}
    model.eval()
    out = model.test_step(batch())
    assert out[0].pred_sem_seg.data.shape == (1, 16, 16)


def test_constructor_errors(embedding_table):
    model = tiny_model(embedding_table[0])
    build = OPTIM_WRAPPER_CONSTRUCTORS.get(
        'ModuleGroupOptimWrapperConstructor')
    with pytest.raises(ValueError, match="no sub-module 'decode_head.gen'"):
        build(
            dict(
                g=dict(
                    optimizer=dict(type='SGD', lr=1),
                    modules=['decode_head.gen'])))(
                        model)
    with pytest.raises(ValueError, match='needs `modules`'):
        build(dict(g=dict(optimizer=dict(type='SGD', lr=1))))(model)
    # a G or D that no wrapper steps
    with pytest.raises(ValueError, match=r'decode_head\.generator is built'):
        build(
            dict(
                g=dict(optimizer=dict(type='SGD', lr=1), modules=['backbone'
                                                                  ])))(
                                                                      model)
    model.set_stage('transfer')
    with pytest.raises(KeyError, match="needs the optimizer wrappers"):
        model.train_step(
            batch(),
            build(
                dict(
                    g=dict(
                        optimizer=dict(type='SGD', lr=1),
                        modules=[
                            'backbone', 'decode_head.generator',
                            'decode_head.discriminator'
                        ])))(model))


def test_train_step_refuses_unseen_labels(embedding_table):
    """A batch labelling an unseen class (a pipeline without
    MaskUnseenClasses) stops training instead of leaking the class."""
    model = tiny_model(embedding_table[0])
    ow = optim_wrappers(model)
    data = batch()
    data['data_samples'][1].gt_sem_seg.data[0, 5, 5] = 4  # c4 is unseen
    with pytest.raises(
            ValueError, match=r"unseen classes \['c4'\].*"
            'MaskUnseenClasses'):
        model.train_step(data, ow)


def test_auxiliary_head_is_refused(embedding_table):
    """An mmseg base's auxiliary head would silently stay untrained."""
    cfg = dict(
        type='ZeroShotEncoderDecoder',
        backbone=dict(
            type='ResNetV1c',
            depth=18,
            base_channels=4,
            stem_channels=4,
            out_indices=(2, 3)),
        neck=dict(
            type='SIM',
            in_channels=32,
            channels=8,
            dilations=(1, 2),
            pe_channels=8,
            num_heads=2,
            latent_channels=8,
            latent_hidden=4),
        decode_head=dict(
            type='SIGNHead',
            in_channels=8,
            channels=8,
            num_classes=5,
            class_embeddings=embedding_table[0],
            latent_channels=8,
            generator_hidden=(16, ),
            generator_dropout=0.0,
            trunk_channels=16),
        auxiliary_head=dict(
            type='FCNHead',
            in_channels=16,
            in_index=0,
            channels=8,
            num_classes=5))
    with pytest.raises(ValueError, match='does not train an auxiliary head'):
        MODELS.build(cfg)


def hand_pseudo_labels(model, data, temperature=None):
    """Targets and weights of the teacher (the model now, eval mode) by a
    naive per-pixel loop: every ignored pixel takes its best unseen class;
    AST weight ``exp((p - p_max) / T)`` over the image (weight 1 without
    a temperature)."""
    teacher = copy.deepcopy(model).eval()
    prep = teacher.data_preprocessor(copy.deepcopy(data), True)
    with torch.no_grad():
        logits = teacher.decode_head(teacher.extract_feat(prep['inputs']))
        probs = torch.nn.functional.interpolate(
            logits, size=(16, 16), mode='bilinear').softmax(1)
    unseen = [3, 4]
    targets, weights = [], []
    for b, sample in enumerate(prep['data_samples']):
        label = sample.gt_sem_seg.data[0]
        target, weight = label.clone(), torch.zeros(16, 16)
        confs = {}
        for i in range(16):
            for j in range(16):
                if label[i, j] != 255:
                    weight[i, j] = 1.0
                    continue
                p = [probs[b, c, i, j].item() for c in unseen]
                target[i, j] = unseen[p.index(max(p))]
                confs[i, j] = max(p)
        top = max(confs.values())
        for (i, j), p in confs.items():
            weight[i, j] = 1.0 if temperature is None else \
                torch.exp(torch.tensor((p - top) / temperature)).item()
        targets.append(target)
        weights.append(weight)
    return torch.stack(targets), torch.stack(weights)


@pytest.mark.parametrize('classifier', ['linear', 'shared_trunk'])
def test_self_train_step_is_the_train_update_on_pseudo_labels(
        embedding_table, classifier):
    """The released self-training iteration (docs/reproduction.md): one
    self-training step (every ignored pixel pseudo-labelled, weight 1)
    changes the weights exactly as one train-stage step on the hand-made
    pseudo-labelled batch does, with the same learning rates."""
    torch.manual_seed(0)
    model = tiny_model(embedding_table[0], classifier)
    model.train()
    reference = copy.deepcopy(model)
    targets, _ = hand_pseudo_labels(model, batch())
    assert (targets == 255).sum() == 0  # every pixel is labelled now
    model.set_stage('self_train', mode='ST_topk', top_k=5)  # all classes
    reference.set_stage('train')
    pseudo = batch()
    for sample, target in zip(pseudo['data_samples'], targets):
        sample.gt_sem_seg = PixelData(data=target[None])
    torch.manual_seed(1)
    log_st = model.train_step(batch(), optim_wrappers(model, sgd=True))
    torch.manual_seed(1)
    log_train = reference._train_step(
        *(lambda d:
          (d['inputs'], d['data_samples']))(reference.data_preprocessor(
              pseudo, True)), optim_wrappers(reference, sgd=True))
    got, want = model.state_dict(), reference.state_dict()
    for key in want:
        torch.testing.assert_close(got[key], want[key], msg=key)
    for key, value in log_train.items():
        torch.testing.assert_close(log_st[key], value, msg=key)


def test_ast_weights_enter_the_segmentation_ce(embedding_table):
    """AST (eq. 16): the self-training ``loss_ce`` is Σ w·ce / Σ w over
    seen pixels (w = 1) and pseudo-labelled pixels (w = exp((p - p_max) /
    T) per image), computed here pixel by pixel on the same forward pass;
    ``loss_kld`` covers every pixel that now has a label."""
    torch.manual_seed(0)
    model = tiny_model(embedding_table[0], 'shared_trunk')
    model.train()
    reference = copy.deepcopy(model)
    targets, weights = hand_pseudo_labels(model, batch(), temperature=0.5)
    assert 0 < weights.min() < 1 and weights.max() == 1
    model.set_stage('self_train', mode='AST', temperature=0.5)
    torch.manual_seed(1)
    log_vars = model.train_step(batch(), optim_wrappers(model))
    torch.manual_seed(1)  # the same forward pass (teacher: no random draw)
    prep = reference.data_preprocessor(batch(), True)
    feats = reference.extract_feat(prep['inputs'])
    logits = torch.nn.functional.interpolate(
        reference.decode_head.forward(feats), size=(16, 16), mode='bilinear')
    num = den = 0.0
    for b in range(2):
        for i in range(16):
            for j in range(16):
                t = targets[b, i, j]
                ce = -logits[b, :, i, j].log_softmax(0)[t]
                num = num + weights[b, i, j] * ce
                den = den + weights[b, i, j]
    torch.testing.assert_close(log_vars['loss_ce'], (num / den).detach())
    mu, logvar = feats[1], feats[2]
    kl = -0.5 * (1 + logvar - mu.pow(2) - logvar.exp()).mean(1)
    torch.testing.assert_close(log_vars['loss_kld'], 100 * kl.mean().detach())


def test_inference_path_skips_logvar_and_equals_full_path(embedding_table):
    """encode_decode / mode='tensor' run backbone → SIM → C without the
    SIM's logvar conv (z = mu at test time), with the logits of the full
    extract_feat path; training still computes logvar."""
    torch.manual_seed(0)
    model = tiny_model(embedding_table[0]).eval()
    calls = []
    model.neck.reparam.logvar.register_forward_hook(lambda *a: calls.append(1))
    x = torch.rand(2, 3, 16, 16) * 255
    with torch.no_grad():
        full = model.decode_head.forward(model.extract_feat(x))
        assert len(calls) == 1
        lean = model._forward(x)
        metas = [
            dict(img_shape=(16, 16), ori_shape=(16, 16), pad_shape=(16, 16))
        ] * 2
        seg = model.encode_decode(x, metas)
    assert len(calls) == 1, 'the inference path computed logvar'
    assert len(model.extract_inference_feat(x)) == 1
    assert torch.equal(lean, full)
    torch.testing.assert_close(
        seg,
        torch.nn.functional.interpolate(
            full, size=(16, 16), mode='bilinear', align_corners=False))
    model.train()
    assert len(model.extract_inference_feat(x)) == 4
    assert len(calls) == 2
