"""The segmentor's side of the one seen / unseen split: inference with a
config of another split, and training batches that label unseen pixels,
are refused."""
import torch

from ...datasets import dataset_metainfo_from_cfg


class SplitChecksMixin:
    """For an mmseg ``EncoderDecoder`` whose head has ``unseen_mask`` and
    ``class_names`` (``SIGNHead``)."""

    @property
    def cfg(self):
        """The config mmseg's ``init_model`` / ``MMSegInferencer`` attach
        after loading the checkpoint (``None`` under a Runner)."""
        return self.__dict__.get('_attached_cfg')

    @cfg.setter
    def cfg(self, config) -> None:
        # the inference APIs' hook: init_model attaches the config after
        # loading the weights, MMSegInferencer before (then
        # _load_from_state_dict checks)
        self._check_split_of(config, self.decode_head.unseen_mask)
        self.__dict__['_attached_cfg'] = config

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        mask = state_dict.get(prefix + 'decode_head.unseen_mask')
        if mask is not None:
            self._check_split_of(self.cfg, mask)
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def _check_split_of(self, config, unseen_mask) -> None:
        """Refuse ``config`` when the unseen classes of its test (else val)
        dataset are not those of ``unseen_mask`` (the checkpoint's split).
        A top-level ``allow_split_change=True`` skips the check."""
        if config is None or config.get('allow_split_change', False) or \
                not bool(unseen_mask.any()):
            return  # no config yet, or weights without a split
        for key in ('test_dataloader', 'val_dataloader'):
            loader = config.get(key) or {}
            meta = dataset_metainfo_from_cfg(loader.get('dataset'))
            if meta is None:
                continue
            names = getattr(self.decode_head, 'class_names', None) or \
                meta['classes']
            if len(names) != unseen_mask.numel():
                return  # the class-count check is the strict loader's
            trained = tuple(n for n, f in zip(names, unseen_mask.tolist())
                            if f)
            wanted = tuple(meta['unseen_classes'])
            if {n.strip() for n in wanted} != {n.strip() for n in trained}:
                raise ValueError(
                    f'The loaded weights were trained with the unseen '
                    f'classes {trained} (decode_head.unseen_mask), but the '
                    f'config\'s {key}.dataset has {wanted}: its results '
                    'would be read with another split. Use the config the '
                    'model was trained with (or its split), or set '
                    '`allow_split_change=True` in the config (e.g. '
                    "cfg_options={'allow_split_change': True}) for a "
                    'deliberate cross-split study.')
            return

    def _refuse_unseen_labels(self, data_samples) -> None:
        """No training batch may label a pixel with an unseen class (it
        would be learnt from its labels: no zero-shot result)."""
        head = self.decode_head
        unseen = head.unseen_mask.nonzero().flatten()
        if not len(unseen):
            return
        labels = torch.cat([s.gt_sem_seg.data.flatten() for s in data_samples])
        labels = labels[(labels >= 0) & (labels < head.num_classes)]
        counts = torch.bincount(labels, minlength=head.num_classes)
        found = counts[unseen] > 0
        if bool(found.any()):
            names = [head.class_names[i] for i in unseen[found].tolist()]
            raise ValueError(
                f'A training batch labels pixels with the unseen classes '
                f'{names}: the model would learn them from their labels. '
                "Put dict(type='MaskUnseenClasses') right after "
                'LoadAnnotations in the training pipeline (zero-shot '
                'datasets insert it themselves when they are built with a '
                'training pipeline; this batch came from another dataset '
                'or a pipeline taken for an evaluation one), or set '
                'drop_unseen_images=True on the dataset.')
