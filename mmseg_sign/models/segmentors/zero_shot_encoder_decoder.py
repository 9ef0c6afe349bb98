"""ZeroShotEncoderDecoder: an EncoderDecoder whose ``train_step`` runs the
step of the current SIGN stage over an ``OptimWrapperDict`` (the stages:
docs/reproduction.md).
"""
import copy
import logging
from typing import Dict, Optional

import torch
import torch.nn.functional as F
from mmengine.logging import print_log
from mmengine.optim import OptimWrapper, OptimWrapperDict
from mmseg.models.segmentors import EncoderDecoder
from mmseg.models.utils import resize
from mmseg.registry import MODELS

from ...engine.optim_wrappers.gradient_sync import update_params
from ...engine.optim_wrappers.nan_guard import check_finite_update
from ...structures.stage_plan import (STAGE_OPTIONS, stage_optim_wrappers,
                                      stage_options)
from ..necks import SpatialInformationModule
from .compile_modules import compile_modules
from .split_checks import SplitChecksMixin


@MODELS.register_module()
class ZeroShotEncoderDecoder(SplitChecksMixin, EncoderDecoder):
    """Backbone → SIM neck → ``SIGNHead``, trained stage by stage.

    The training loop (``StagePlanTrainLoop``, ``train_cfg.stages``) sets
    :attr:`stage` from the iteration before every iteration. The optimizer
    wrappers (built up front by ``ModuleGroupOptimWrapperConstructor``)
    are:

    * ``segmentor`` (backbone, SIM, C), ``generator`` (G),
      ``discriminator`` (D): the ``train`` stage;
    * ``transfer`` (C): the ``transfer`` stage;
    * ``self_train`` (backbone, SIM, C): the ``self_train`` stage, whose
      teacher (:attr:`teacher`) is a frozen copy of the model taken when
      the stage starts.

    Inference is the plain ``EncoderDecoder`` path: backbone → SIM → C.

    ``compile_cfg`` (optional, off by default): ``torch.compile`` of chosen
    sub-modules, e.g. ``dict(modules=['decode_head.generator',
    'decode_head.discriminator'])`` (:func:`compile_modules`).
    """

    def __init__(self, *args, compile_cfg: Optional[dict] = None, **kwargs):
        super().__init__(*args, **kwargs)
        if not self.with_neck:
            raise ValueError('ZeroShotEncoderDecoder needs a neck (the SIM) '
                             'that returns (F_x, mu, logvar, z).')
        if self.with_auxiliary_head:
            raise ValueError(
                'ZeroShotEncoderDecoder does not train an auxiliary head '
                '(its stages step the SIM, C, G and D only): an '
                'auxiliary_head would stay untrained. Remove '
                'model.auxiliary_head (e.g. auxiliary_head=None after '
                'inheriting an mmseg model base).')
        self.stage = 'train'
        self.stage_cfg: dict = {}
        self.stage_iter = 0  # iteration within the stage (set by the loop)
        self.teacher = None
        self.teacher_shares_frozen = False  # set by build_teacher
        self._feature_hw = {}  # input (H, W) -> feature (h, w)
        self.compiled_modules = compile_modules(self, compile_cfg)

    def __setattr__(self, name, value):
        # the teacher is not a sub-module: not in state_dict() (it is saved
        # under its own key by SelfTrainingTeacherHook), parameters() or .to()
        if name == 'teacher':
            object.__setattr__(self, name, value)
        else:
            super().__setattr__(name, value)

    def set_stage(self, name: str, **stage_cfg) -> None:
        """Switch to stage ``name`` with its options (defaults filled in
        from ``STAGE_OPTIONS``)."""
        if name not in STAGE_OPTIONS:
            raise ValueError(f'Unknown stage {name!r}; stages: '
                             f'{tuple(STAGE_OPTIONS)}.')
        stage_cfg.setdefault('iters', 1)
        stage_cfg = stage_options(0, dict(stage_cfg, name=name))
        for key in ('name', 'iters'):
            stage_cfg.pop(key)
        self.stage, self.stage_cfg = name, stage_cfg
        self.stage_iter = 0
        if name == 'self_train' and self.teacher is None:
            self.build_teacher()
        elif name != 'self_train':
            self.teacher = None

    def build_teacher(self, state_dict: Optional[dict] = None) -> None:
        """Freeze a copy of the current model as the self-training teacher
        (or of ``state_dict``, a teacher restored from a checkpoint)."""
        self.teacher = None  # not copied into the new teacher
        teacher = copy.deepcopy(self)
        if state_dict is not None:
            teacher.load_state_dict(state_dict)
        teacher.eval()
        teacher.requires_grad_(False)
        self.teacher = teacher
        self.teacher_shares_frozen = _same_frozen_part(self, teacher)

    def _frozen_part(self, inputs: torch.Tensor):
        """The backbone's frozen part for ``inputs`` (its ``forward_frozen``)
        when the teacher's is the same function, else None.

        A backbone with frozen stages (EfficientNetLite's
        ``frozen_stages``) holds them in eval mode with fixed weights, so
        the teacher (a copy) computes bit for bit what the student does
        there: self-training computes it once for both (with the Lite0
        CamVid recipe, three quarters of the backbone's forward). Checked
        when the teacher is built (equal weights and statistics) and at
        every step (the student's frozen modules in eval mode)."""
        if not self.teacher_shares_frozen or any(
                m.training for m in self.backbone.frozen_modules()):
            return None
        return self.backbone.forward_frozen(inputs)

    def extract_feat(self, inputs: torch.Tensor, frozen=None):
        """``EncoderDecoder.extract_feat``; ``frozen``: the backbone's frozen
        part for ``inputs``, already computed (:meth:`_frozen_part`)."""
        if frozen is None:
            return super().extract_feat(inputs)
        return self.neck(self.backbone(inputs, frozen=frozen))

    # ------------------------------------------------------------ inference
    def extract_inference_feat(self,
                               inputs: torch.Tensor,
                               frozen=None) -> tuple:
        """Backbone → SIM in eval mode: ``(F_x, )`` only (the SIM skips
        ``logvar``, which inference does not use); the full
        :meth:`extract_feat` tuple in training mode or with a neck that
        has no ``features_only`` switch. ``frozen``: as
        :meth:`extract_feat`'s."""
        if self.training or not isinstance(self.neck,
                                           SpatialInformationModule):
            return self.extract_feat(inputs, frozen)
        backbone = self.backbone(inputs) if frozen is None else \
            self.backbone(inputs, frozen=frozen)
        return self.neck(backbone, features_only=True)

    #: whole-image inputs above this many pixels get a note on the SIM's
    #: cost (its attention is quadratic in the feature pixels)
    LARGE_WHOLE_IMAGE = 1024 * 1024

    def predict(self, inputs: torch.Tensor, data_samples=None):
        """mmseg's ``predict``, after the checks training makes too: an
        image with a side under 2 pixels is refused (training refuses it
        when its labels load; inference returned a 1×1 map), and a large
        whole-image input is said to be slow once, with the remedy."""
        for sample in data_samples or []:
            shape = sample.metainfo.get('ori_shape')
            if shape is not None and min(shape[:2]) < 2:
                raise ValueError(
                    f"{sample.metainfo.get('img_path') or 'an image'} is "
                    f'{shape[0]}×{shape[1]}: too small to segment (at least '
                    '2 pixels a side, as in training).')
        h, w = inputs.shape[-2:]
        if h * w > self.LARGE_WHOLE_IMAGE and \
                self.test_cfg.get('mode', 'whole') == 'whole' and \
                not getattr(ZeroShotEncoderDecoder, '_said_large', False):
            ZeroShotEncoderDecoder._said_large = True
            print_log(
                f'whole-image inference at {h}×{w}: the SIM attends over '
                'every feature pixel, so time and memory grow with the '
                'square of the image area (a 2048×2048 image takes ~40 s '
                "on a CPU core). For large images set model.test_cfg=dict("
                "mode='slide', crop_size=(512, 512), stride=(341, 341)).",
                logger='current',
                level=logging.WARNING)
        return super().predict(inputs, data_samples)

    def encode_decode(self, inputs: torch.Tensor,
                      batch_img_metas: list) -> torch.Tensor:
        """mmseg's inference path (``whole`` / ``slide``): C(SIM(E(x)))."""
        return self.decode_head.predict(
            self.extract_inference_feat(inputs), batch_img_metas,
            self.test_cfg)

    def _forward(self, inputs: torch.Tensor, data_samples=None):
        """``mode='tensor'``: C's logits ``[B, K, h, w]``."""
        return self.decode_head.forward(self.extract_inference_feat(inputs))

    # ---------------------------------------------------------------- steps
    def train_step(self, data,
                   optim_wrapper: OptimWrapperDict) -> Dict[str, torch.Tensor]:
        if not isinstance(optim_wrapper, OptimWrapperDict):
            raise TypeError(
                'ZeroShotEncoderDecoder trains with several optimizers: set '
                "optim_wrapper=dict(constructor='ModuleGroupOptimWrapper"
                "Constructor', segmentor=..., generator=..., discriminator="
                '..., transfer=...) (see configs/sign).')
        data = self.data_preprocessor(data, True)
        self._refuse_unseen_labels(data['data_samples'])
        step = getattr(self, f'_{self.stage}_step')
        log_vars = step(data['inputs'], data['data_samples'], optim_wrapper)
        # mmseg's total `loss`: the sum of this iteration's loss terms
        log_vars['loss'] = sum(v for k, v in log_vars.items()
                               if k.startswith('loss'))
        return log_vars

    def _require(self, optim_wrapper: OptimWrapperDict, *names):
        missing = [n for n in names if n not in optim_wrapper]
        if missing:
            raise KeyError(f'Stage {self.stage!r} needs the optimizer '
                           f'wrappers {missing} in optim_wrapper; it has '
                           f'{list(optim_wrapper.keys())}.')
        return [optim_wrapper[n] for n in names]

    def _losses_for(self, optim_wrapper: OptimWrapper, fn, *args, **kwargs):
        """``fn(*args, **kwargs)`` (the losses of ``optim_wrapper``'s next
        update, and whatever else ``fn`` returns) under the wrapper's
        ``optim_context`` and, in distributed training, inside its
        ``grad_sync`` DDP (``ZeroShotDataParallel``), so the gradients of
        the backward that follows are all-reduced while it runs."""
        sync = getattr(optim_wrapper, 'grad_sync', None)
        with optim_wrapper.optim_context(self):
            if sync is None or not torch.is_grad_enabled():
                return fn(*args, **kwargs)
            if not optim_wrapper.should_sync():  # gradient accumulation
                with sync.no_sync():
                    return sync(fn, *args, **kwargs)
            return sync(fn, *args, **kwargs)

    def _update(self, optim_wrapper: OptimWrapper,
                losses: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        """Sum ``losses``, step ``optim_wrapper``, return the log
        variables without the total. Stops training on a non-finite loss
        or non-finite weights after the step (:func:`check_finite_update`).
        """
        loss, log_vars = self.parse_losses(losses)
        update_params(optim_wrapper, loss)
        check_finite_update(self, optim_wrapper, log_vars)  # NaN guard
        log_vars.pop('loss')
        return log_vars

    def _extra_scale_logits(self, inputs: torch.Tensor) -> list:
        """C's logits at the extra input scales of ``train_cfg.ce_scales``
        (DeepLab-v2 multi-scale training; scale 1 is the main pass)."""
        scales = (self.train_cfg or {}).get('ce_scales', (1.0, ))
        return [
            self.decode_head.forward(
                self.extract_feat(
                    resize(
                        inputs,
                        scale_factor=s,
                        mode='bilinear',
                        align_corners=False))) for s in scales if s != 1.0
        ]

    def _adversarial_step(self,
                          feats,
                          data_samples,
                          gen_ow,
                          dis_ow,
                          real_key: str,
                          real_weight: float,
                          fake_weight: float = 0.0,
                          weights: Optional[torch.Tensor] = None):
        """G (β·MMD + adversarial, eq. 5-7) then D (adversarial, eq. 6)
        on the same pixels; D's wrapper also trains C by ``real_weight``
        × CE on the real feature maps (per-pixel ``weights`` if given) and
        ``fake_weight`` × CE on the generated seen features, where these
        weights are > 0."""
        head = self.decode_head
        losses_g, real, fake, labels = self._losses_for(
            gen_ow, head.loss_generator, feats, data_samples)
        log_vars = self._update(gen_ow, losses_g)
        # D got gradients through loss_adv_g; its own step starts clean
        dis_ow.zero_grad()

        def discriminator_losses():
            losses_d = head.loss_discriminator(real, fake.detach())
            if real_weight:
                losses_d[real_key] = head.loss_classifier_real(
                    feats[0], data_samples, real_weight, weights)
            if fake_weight:
                losses_d['loss_ce_fake'] = fake_weight * head._cross_entropy(
                    head.classify(fake.detach()), labels)
            return losses_d

        losses_d = self._losses_for(dis_ow, discriminator_losses)
        if losses_d:  # none: no D (ZS3Net) and no C on its wrapper
            log_vars.update(self._update(dis_ow, losses_d))
        return log_vars

    def _stage_wrappers(self, optim_wrapper: OptimWrapperDict) -> dict:
        """``{role: wrapper}`` of the current stage (the plan's
        :func:`~mmseg_sign.structures.stage_optim_wrappers`)."""
        roles = stage_optim_wrappers(dict(self.stage_cfg, name=self.stage))
        return dict(zip(roles, self._require(optim_wrapper, *roles.values())))

    def _train_step(self,
                    inputs,
                    data_samples,
                    optim_wrapper,
                    weights: Optional[torch.Tensor] = None,
                    frozen=None):
        """Eq. 4 (E, SIM [, C]) and eq. 7 (G, D [+ C]), optimised jointly.

        Self-training (``update='train'``) runs the same update with its
        own wrappers on the pseudo-labelled targets in
        ``data_samples``; ``weights`` (``[B, H, W]``, at the label
        resolution) weigh C's cross-entropy terms per pixel (AST, eq. 16);
        ``frozen``: the backbone's frozen part, shared with the teacher.
        """
        wrappers = self._stage_wrappers(optim_wrapper)
        seg_ow, gen_ow, dis_ow = (
            wrappers[k] for k in ('segmentor', 'generator', 'discriminator'))
        head = self.decode_head

        def segmentation_losses():
            feats = self.extract_feat(inputs, frozen)
            return feats, head.loss_segmentation(
                feats,
                data_samples,
                self._extra_scale_logits(inputs),
                weights=weights)

        feats, losses = self._losses_for(seg_ow, segmentation_losses)
        log_vars = self._update(seg_ow, losses)
        shared = head.classifier == 'shared_trunk'
        log_vars.update(
            self._adversarial_step(
                feats,
                data_samples,
                gen_ow,
                dis_ow,
                'loss_ce_d',
                head.loss_ce_d_weight if shared else 0.0,
                weights=weights))
        return log_vars

    @property
    def feature_sizes(self) -> list:
        """The feature-size cache of :meth:`_feature_pixels` as
        ``[[H, W, h, w], ...]``: part of a run's state (filling it runs the
        SIM once, which draws ``z`` and updates BN statistics), so
        ``SelfTrainingTeacherHook`` keeps it in checkpoints and ``--resume``
        restores it instead of refilling it at another iteration."""
        return [[*k, *v] for k, v in sorted(self._feature_hw.items())]

    @feature_sizes.setter
    def feature_sizes(self, rows) -> None:
        try:
            cache = {(int(r[0]), int(r[1])): (int(r[2]), int(r[3]))
                     for r in rows}
        except (TypeError, ValueError, IndexError):
            raise ValueError(
                'feature sizes must be [[H, W, h, w], ...] (input size, '
                f'feature size), got {str(rows)[:60]!r}.') from None
        self._feature_hw = cache

    def _feature_pixels(self, inputs: torch.Tensor) -> int:
        """``B·h·w`` of the feature map for ``inputs`` (cached per input
        size: the alternate transfer blocks on synthetic features only do
        not run the backbone)."""
        key = tuple(inputs.shape[-2:])
        cache = self._feature_hw
        if key not in cache:
            with torch.no_grad():
                cache[key] = tuple(self.extract_feat(inputs[:1])[0].shape[2:])
        h, w = cache[key]
        return inputs.shape[0] * h * w

    def _transfer_step(self, inputs, data_samples, optim_wrapper):
        """Transfer stage (eq. 8-9), E and SIM frozen.

        ``mode='classifier'``: C on real features and on synthetic features
        ``G(M(ŷ), z ~ N(0, I))`` every iteration. ``mode='alternate'`` (the
        authors' recipe): blocks of ``block_iters`` iterations alternate
        between (1) G and D training on, and C learning from, real and
        generated seen features (the SIM still samples z) and (2) C on
        synthetic features of sampled label maps only.

        ``latent='posterior'`` feeds G the SIM's z of the batch's real
        pixels instead of N(0, I) noise (sampled in ``'alternate'``, where
        the SIM stays in train mode; its mean ``mu`` in ``'classifier'``).
        """
        opts = self.stage_cfg
        head = self.decode_head
        self.backbone.eval()  # frozen: no BN statistic updates
        if opts['mode'] == 'classifier':
            transfer_ow = self._stage_wrappers(optim_wrapper)['classifier']
            self.neck.eval()
            with torch.no_grad(), transfer_ow.optim_context(self):
                feats = self.extract_feat(inputs)
            losses = self._losses_for(transfer_ow, head.loss_transfer, feats,
                                      data_samples, opts['real_weight'],
                                      opts['synth_weight'], opts['latent'])
            return self._update(transfer_ow, losses)
        wrappers = self._stage_wrappers(optim_wrapper)
        transfer_ow, gen_ow = wrappers['classifier'], wrappers['generator']
        if (self.stage_iter // opts['block_iters']) % 2 == 0:
            # the SIM stays in train mode: samples z (autocast as C's update)
            with torch.no_grad(), transfer_ow.optim_context(self):
                feats = self.extract_feat(inputs)
            return self._adversarial_step(feats, data_samples, gen_ow,
                                          transfer_ow, 'loss_ce',
                                          opts['real_weight'],
                                          opts['fake_weight'])
        if opts['latent'] == 'posterior':
            # the SIM (train mode) samples z of the batch's real pixels
            with torch.no_grad(), transfer_ow.optim_context(self):
                latent = head.posterior_latent(self.extract_feat(inputs))
            pixels = latent.shape[0]
        else:
            latent, pixels = None, self._feature_pixels(inputs)
        losses = self._losses_for(
            transfer_ow, lambda: dict(
                loss_ce_synth=head.loss_synthetic(pixels, inputs, opts[
                    'synth_weight'], latent)))
        return self._update(transfer_ow, losses)

    def _self_train_step(self, inputs, data_samples, optim_wrapper):
        """Section 3.4: the frozen teacher's pseudo labels for the ignored
        pixels (ST: top-p / top-k, AST: eq. 16 weights), then

        * ``update='train'`` (the authors' release, ``trainer.train(data,
          gt_new, mode='step1')``): the ``train`` stage's own update on the
          pseudo-labelled targets, with the wrappers ``self_train`` (E,
          SIM: weighted CE + α·KL), ``self_train_generator`` (G: adv +
          β·MMD) and ``self_train_discriminator`` (D + C: adv + weighted
          CE on real features);
        * ``update='classifier'`` (this project before): E, SIM and C
          (``self_train``) on the weighted CE, G and D frozen.

        ``synth_weight`` > 0 adds C's CE on synthetic features (eq. 8).
        """
        if self.teacher is None:
            raise RuntimeError('self_train stage without a teacher; call '
                               'set_stage("self_train") first.')
        cfg = self.stage_cfg
        head = self.decode_head
        st_ow = self._stage_wrappers(optim_wrapper)['segmentor']
        # the teacher in the student's precision; its softmax and the
        # pseudo-label weights in float32 (pseudo_labels)
        with torch.no_grad(), st_ow.optim_context(self):
            frozen = self._frozen_part(inputs)
            t_logits = self.teacher.decode_head(
                self.teacher.extract_inference_feat(inputs, frozen))
            t_logits = F.interpolate(
                t_logits,
                size=inputs.shape[-2:],
                mode='bilinear',
                align_corners=head.align_corners)
            targets, weights, stats = head.pseudo_labels(
                t_logits, data_samples, cfg['mode'], cfg['temperature'],
                cfg['top_p'], cfg['top_k'], cfg['max_pseudo_ratio'],
                cfg['candidates'])
        if cfg['update'] == 'train':
            log_vars = self._train_step(
                inputs, head.with_targets(data_samples, targets),
                optim_wrapper, weights, frozen)
            if cfg['synth_weight']:
                dis_ow = self._stage_wrappers(optim_wrapper)['discriminator']
                pixels = self._feature_pixels(inputs)
                losses = self._losses_for(
                    dis_ow, lambda: dict(
                        loss_ce_synth=head.loss_synthetic(
                            pixels, inputs, cfg['synth_weight'])))
                log_vars.update(self._update(dis_ow, losses))
        else:
            losses = self._losses_for(
                st_ow, lambda: head.loss_self_train(
                    self.extract_feat(inputs, frozen), targets, weights, cfg[
                        'synth_weight']))
            log_vars = self._update(st_ow, losses)
        log_vars.update(stats)
        return log_vars


def _same_frozen_part(student, teacher) -> bool:
    """Whether both backbones have a frozen part (``frozen_modules``) with
    equal weights and BN statistics, which the student may then compute for
    both (:meth:`ZeroShotEncoderDecoder._frozen_part`)."""
    if not hasattr(student.backbone, 'forward_frozen'):
        return False
    mine, theirs = ([
        t for m in model.backbone.frozen_modules()
        for t in m.state_dict().values()
    ] for model in (student, teacher))
    return bool(mine) and len(mine) == len(theirs) and all(
        a.shape == b.shape and torch.equal(a, b) for a, b in zip(mine, theirs))
