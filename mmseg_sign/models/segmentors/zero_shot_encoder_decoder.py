"""ZeroShotEncoderDecoder: an EncoderDecoder whose ``train_step`` runs the
step of the current SIGN stage over an ``OptimWrapperDict`` (DESIGN §3.4).
"""
import copy
from typing import Dict, Optional

import torch
import torch.nn.functional as F
from mmengine.dist import all_reduce_params, get_world_size
from mmengine.optim import OptimWrapper, OptimWrapperDict

from mmseg.models.segmentors import EncoderDecoder
from mmseg.registry import MODELS

STAGES = ('train', 'transfer', 'self_train')


def update_params(optim_wrapper: OptimWrapper, loss: torch.Tensor) -> None:
    """``OptimWrapper.update_params`` with the gradients averaged over
    processes between backward and step.

    The model is not run through DDP's forward (several optimizers and
    backward passes per iteration), so the gradients of exactly this
    wrapper's parameters are all-reduced here instead.
    """
    loss = optim_wrapper.scale_loss(loss)
    optim_wrapper.backward(loss)
    if not optim_wrapper.should_update():
        return
    if get_world_size() > 1:
        grads = []
        for group in optim_wrapper.optimizer.param_groups:
            for p in group['params']:
                if p.grad is None:  # every rank must reduce the same list
                    p.grad = torch.zeros_like(p)
                grads.append(p.grad)
        all_reduce_params(grads, op='mean')
    optim_wrapper.step()
    optim_wrapper.zero_grad()


@MODELS.register_module()
class ZeroShotEncoderDecoder(EncoderDecoder):
    """Backbone → SIM neck → ``SIGNHead``, trained stage by stage.

    ``SIGNStageHook`` sets :attr:`stage` from the iteration before every
    iteration. The optimizer wrappers (built up front by
    ``ModuleGroupOptimWrapperConstructor``) are:

    * ``segmentor`` (backbone, SIM, C), ``generator`` (G),
      ``discriminator`` (D): the ``train`` stage;
    * ``transfer`` (C): the ``transfer`` stage;
    * ``self_train`` (backbone, SIM, C): the ``self_train`` stage, whose
      teacher (:attr:`teacher`) is a frozen copy of the model taken when
      the stage starts.

    Inference is the plain ``EncoderDecoder`` path: backbone → SIM → C.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if not self.with_neck:
            raise ValueError('ZeroShotEncoderDecoder needs a neck (the SIM) '
                             'that returns (F_x, mu, logvar).')
        self.stage = 'train'
        self.stage_cfg: dict = {}
        self.teacher = None

    def __setattr__(self, name, value):
        # the teacher is not a sub-module: not in state_dict() (it is saved
        # under its own key by SIGNStageHook), parameters() or .to()
        if name == 'teacher':
            object.__setattr__(self, name, value)
        else:
            super().__setattr__(name, value)

    def set_stage(self, name: str, **stage_cfg) -> None:
        if name not in STAGES:
            raise ValueError(f'Unknown stage {name!r}; stages: {STAGES}.')
        self.stage, self.stage_cfg = name, stage_cfg
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

    # ---------------------------------------------------------------- steps
    def train_step(self, data, optim_wrapper: OptimWrapperDict
                   ) -> Dict[str, torch.Tensor]:
        if not isinstance(optim_wrapper, OptimWrapperDict):
            raise TypeError(
                'ZeroShotEncoderDecoder trains with several optimizers: set '
                "optim_wrapper=dict(constructor='ModuleGroupOptimWrapper"
                "Constructor', segmentor=..., generator=..., discriminator="
                '..., transfer=...) (see configs/sign).')
        data = self.data_preprocessor(data, True)
        step = getattr(self, f'_{self.stage}_step')
        return step(data['inputs'], data['data_samples'], optim_wrapper)

    def _require(self, optim_wrapper: OptimWrapperDict, *names):
        missing = [n for n in names if n not in optim_wrapper]
        if missing:
            raise KeyError(f'Stage {self.stage!r} needs the optimizer '
                           f'wrappers {missing} in optim_wrapper; it has '
                           f'{list(optim_wrapper.keys())}.')
        return [optim_wrapper[n] for n in names]

    def _train_step(self, inputs, data_samples, optim_wrapper):
        """Eq. 4 (E, SIM, C) and eq. 7 (G, D), optimised jointly."""
        seg_ow, gen_ow, dis_ow = self._require(optim_wrapper, 'segmentor',
                                               'generator', 'discriminator')
        head = self.decode_head
        with seg_ow.optim_context(self):
            feats = self.extract_feat(inputs)
            losses = head.loss_segmentation(feats, data_samples)
        loss, log_vars = self.parse_losses(losses)
        update_params(seg_ow, loss)

        with gen_ow.optim_context(self):
            losses_g, real, fake = head.loss_generator(feats, data_samples)
        loss_g, log_vars_g = self.parse_losses(losses_g)
        update_params(gen_ow, loss_g)

        # D got gradients through loss_adv_g; its own step starts clean
        dis_ow.zero_grad()
        with dis_ow.optim_context(self):
            losses_d = head.loss_discriminator(real, fake.detach())
        loss_d, log_vars_d = self.parse_losses(losses_d)
        update_params(dis_ow, loss_d)

        log_vars.pop('loss')
        log_vars.update((k, v) for k, v in log_vars_g.items() if k != 'loss')
        log_vars.update((k, v) for k, v in log_vars_d.items() if k != 'loss')
        return log_vars

    def _transfer_step(self, inputs, data_samples, optim_wrapper):
        """Eq. 9: only C learns, on frozen real features and on generated
        features of pseudo labels that include unseen classes."""
        (transfer_ow, ) = self._require(optim_wrapper, 'transfer')
        # frozen parts: no BN statistic updates, no dropout noise in E / SIM
        self.backbone.eval()
        self.neck.eval()
        with torch.no_grad():
            feats = self.extract_feat(inputs)
        with transfer_ow.optim_context(self):
            losses = self.decode_head.loss_transfer(feats, data_samples)
        loss, log_vars = self.parse_losses(losses)
        update_params(transfer_ow, loss)
        log_vars.pop('loss')
        return log_vars

    def _self_train_step(self, inputs, data_samples, optim_wrapper):
        """Section 3.4: E, SIM and C learn from seen labels and the frozen
        teacher's unseen pseudo labels (ST: top-p, AST: eq. 16 weights);
        G is frozen and only feeds ``loss_ce_synth``."""
        (st_ow, ) = self._require(optim_wrapper, 'self_train')
        if self.teacher is None:
            raise RuntimeError('self_train stage without a teacher; call '
                               'set_stage("self_train") first.')
        cfg = dict(mode='AST', temperature=2.0, top_p=75.0)
        cfg.update(self.stage_cfg)
        head = self.decode_head
        with torch.no_grad():
            t_logits = self.teacher.decode_head(
                self.teacher.extract_feat(inputs))
            t_logits = F.interpolate(
                t_logits, size=inputs.shape[-2:], mode='bilinear',
                align_corners=head.align_corners)
            targets, weights, stats = head.pseudo_labels(
                t_logits, data_samples, cfg['mode'], cfg['temperature'],
                cfg['top_p'])
        with st_ow.optim_context(self):
            feats = self.extract_feat(inputs)
            losses = head.loss_self_train(feats, targets, weights)
        loss, log_vars = self.parse_losses(losses)
        update_params(st_ow, loss)
        log_vars.pop('loss')
        log_vars.update(stats)
        return log_vars
