"""M: the frozen class-embedding table of a zero-shot decode head, its
seen / unseen split and classes added by name (``SIGNHead``)."""
import logging
import os
from typing import List, Optional, Sequence, Tuple, Union

import numpy as np
import torch
import torch.nn as nn
from mmengine.logging import print_log
from torch import Tensor

from ...embeddings.table import read_class_embeddings
from ...structures.class_split import _as_list, resolve_split


class ClassEmbeddingMixin:
    """The buffers ``class_embedding`` (M, ``[num_classes, D]``) and
    ``unseen_mask`` (``[num_classes]``) of a decode head, and what reads and
    changes them. The head calls :meth:`_init_class_embedding` in its
    ``__init__`` (after ``BaseDecodeHead.__init__``); its generator (if it
    has one, ``self.generator``) is rebuilt by ``set_embed_channels`` when a
    checkpoint's table replaces a placeholder of another width.
    """

    def _init_class_embedding(self, path: str, embed_dim: int,
                              held_out_classes, unseen_classes) -> None:
        # one name (a string) is one class, not its characters (as the
        # dataset's held_out_classes / unseen_classes)
        self.held_out_classes = tuple(_as_list(held_out_classes))
        bad = [c for c in self.held_out_classes if not isinstance(c, str)]
        if bad:
            raise TypeError(
                f'decode_head.held_out_classes: expected class names '
                f'(strings), got {bad}; name the table rows to leave out.')
        if unseen_classes is not None:
            unseen_classes = _as_list(unseen_classes)
        names, table = self._load_table(path, embed_dim)
        self._table_path = path
        self.class_names = None if names is None else tuple(names)
        # M: frozen mapping from a class index to its word embedding
        self.register_buffer('class_embedding', torch.from_numpy(table))
        self.register_buffer('unseen_mask',
                             torch.zeros(self.num_classes, dtype=torch.bool))
        self.unseen_classes = unseen_classes
        if unseen_classes is not None and names is not None:
            # (placeholder table: the checkpoint's unseen_mask is the split)
            self.set_class_split(unseen_classes)

    def _load_table(
            self,
            path: str,
            embed_dim: int = 600) -> Tuple[Optional[List[str]], np.ndarray]:
        """The table file's class names and ``[K, D]`` table; ``(None,
        zeros [num_classes, embed_dim])`` if the file does not exist (the
        table must then come from a checkpoint, see ``SIGNHead``).
        """
        self._table_from_checkpoint = False
        self._table_error = None
        try:
            # the project's one validated reader: a missing, empty,
            # truncated or non-npz file (or None) gets a message naming it
            # and the fix
            names, table = read_class_embeddings(path)
        except FileNotFoundError as err:
            if path is None or os.path.isdir(os.fspath(path)):
                raise
            self._table_from_checkpoint = True
            self._table_error = str(err)
            print_log(
                f'SIGNHead: the class-embedding table {path} does not exist '
                f'(cwd: {os.getcwd()}); a zero placeholder '
                f'[{self.num_classes}, {embed_dim}] is used and the table '
                'will come from the checkpoint (decode_head.class_embedding)'
                '. Inference needs a checkpoint; training needs the file.',
                logger='current',
                level=logging.WARNING)
            return None, np.zeros((self.num_classes, embed_dim), np.float32)
        if self.held_out_classes:
            stripped = [n.strip() for n in names]
            unknown = [
                c for c in self.held_out_classes if c.strip() not in stripped
            ]
            if unknown:
                raise ValueError(
                    f'{path}: held_out_classes {unknown} are not in the '
                    f'class-embedding table ({", ".join(names)}).')
            held = {c.strip() for c in self.held_out_classes}
            keep = [i for i, n in enumerate(stripped) if n not in held]
            names, table = [names[i] for i in keep], table[keep]
        if len(names) != self.num_classes:
            raise ValueError(
                f'{path}: the class-embedding table has {len(names)} '
                f'classes but the head has num_classes={self.num_classes}; '
                'rebuild it for this dataset with '
                'tools/build_class_embeddings.py (or '
                'tools/dataset_converters/cagnet_word_vectors.py).')
        return names, table

    def require_table(self) -> None:
        """Raise (``FileNotFoundError``, naming the table file and how to
        build it) if the class-embedding table is still the placeholder of
        a missing file, i.e. neither the file nor a checkpoint gave it.
        Training must call this before its first step."""
        if self._table_from_checkpoint:
            raise FileNotFoundError(
                f'{self._table_error} SIGNHead has only a placeholder '
                'class-embedding table (the file is missing and no '
                'checkpoint with decode_head.class_embedding was loaded); '
                'training needs the table file.')

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict,
                              missing_keys, unexpected_keys, error_msgs):
        # a placeholder table takes the checkpoint's table (and its width)
        saved = state_dict.get(prefix + 'class_embedding')
        if self._table_from_checkpoint and isinstance(saved, Tensor) and \
                saved.dim() == 2 and saved.shape[0] == self.num_classes:
            if saved.shape != self.class_embedding.shape:
                self.class_embedding = self.class_embedding.new_zeros(
                    saved.shape)
                generator = getattr(self, 'generator', None)
                if generator is not None:
                    if not hasattr(generator, 'set_embed_channels'):
                        raise ValueError(
                            f'The checkpoint\'s class-embedding table is '
                            f'{saved.shape[1]}-d, the placeholder '
                            f'{self.class_embedding.shape[1]}-d, and '
                            f'{type(generator).__name__} has no '
                            'set_embed_channels(): build the head with the '
                            'table file (class_embeddings) or embed_dim='
                            f'{saved.shape[1]}.')
                    generator.set_embed_channels(saved.shape[1])
            self._table_from_checkpoint = False
            self._table_error = None
        elif isinstance(saved, Tensor) and not self._table_from_checkpoint:
            self._check_saved_table(saved)
        super()._load_from_state_dict(state_dict, prefix, local_metadata,
                                      strict, missing_keys, unexpected_keys,
                                      error_msgs)

    def _check_saved_table(self, saved: Tensor) -> None:
        """A checkpoint's M replaces the table read from the file: refuse
        it where the two differ, or the model would run on the checkpoint's
        vectors under the file's class names (e.g. ``tools/test.py
        --cfg-options model.decode_head.class_embeddings=OTHER.npz`` scored
        with the checkpoint's table, without a word).

        Raises:
            ValueError: naming the table file and both fixes.
        """
        mine = self.class_embedding
        same = saved.shape == mine.shape and torch.allclose(
            saved.detach().float().cpu(),
            mine.detach().float().cpu(),
            rtol=1e-4,
            atol=1e-6)
        if same:
            return
        shown = ', '.join(self.class_names[:4]) + (
            ', ...' if len(self.class_names) > 4 else '')
        raise ValueError(
            f'the class-embedding table {self._table_path} '
            f'(model.decode_head.class_embeddings: {mine.shape[0]} x '
            f'{mine.shape[1]}, classes {shown}) is not the table this '
            'checkpoint was trained with (its decode_head.class_embedding: '
            f'{saved.shape[0]} x {saved.shape[1]}'
            f'{", other vectors" if saved.shape == mine.shape else ""}); '
            "the model would use the checkpoint's vectors under the file's "
            'class names. Give the table the model was trained with; to '
            'give the model new classes, use tools/add_classes.py.')

    def set_class_split(self,
                        unseen: Sequence[Union[str, int]],
                        classes: Optional[Sequence[str]] = None) -> None:
        """Mark the unseen classes; ``classes`` (the dataset's) must match
        the embedding table's class list when given. Names compare after
        ``str.strip()`` (mmseg's ADE20K class ``'bed '`` is ``'bed'`` in a
        table built from a class file)."""

        def _strip(names):
            return tuple(str(n).strip() for n in names)

        if classes is not None and _strip(classes) != _strip(self.class_names):
            raise ValueError(
                'The dataset classes differ from the class-embedding table '
                f'({len(classes)} vs {len(self.class_names)} classes; first '
                'difference: ' +
                next((f'#{i}: {a!r} vs {b!r}' for i, (a, b) in enumerate(
                    zip(_strip(classes), _strip(self.class_names)))
                      if a != b), 'length') +
                '). Build the table for this dataset.')
        _, unseen_names = resolve_split(self.class_names, unseen=unseen)
        mask = torch.tensor([c in unseen_names for c in self.class_names])
        self.unseen_mask.copy_(mask)

    def add_classes(self, names: Sequence[str], vectors) -> None:
        """Append classes to the model, as unseen classes: their rows to M
        (``vectors``: ``[n, D]``, the table's width), one output each to C
        (the old outputs keep their weights; the new ones start as mmseg
        initialises ``conv_seg``). C must then be refit (``tools/
        add_classes.py``)."""
        if not isinstance(getattr(self, 'conv_seg', None), nn.Conv2d):
            raise ValueError(f'{type(self).__name__} has no conv_seg '
                             'classifier to grow: classes are added to a '
                             'SIGNHead.')
        if self.class_names is None:
            raise ValueError('SIGNHead.add_classes needs the class names of '
                             'the table: load a checkpoint trained with a '
                             'table file, or build the head with one.')
        names = [str(n) for n in names]
        vectors = torch.as_tensor(vectors, dtype=self.class_embedding.dtype)
        have = {n.strip(): n for n in self.class_names}
        clash = [n for n in names if n.strip() in have]
        if clash:
            raise ValueError(f'classes {clash} are already in the model '
                             f'({", ".join(self.class_names)}).')
        twice = sorted({
            n
            for n in names if [m.strip() for m in names].count(n.strip()) > 1
        })
        if twice or not names:
            raise ValueError(f'the new class names must be distinct and not '
                             f'empty, got {names}.')
        width = self.class_embedding.shape[1]
        if vectors.shape != (len(names), width):
            raise ValueError(
                f'the embeddings of {names} have shape '
                f'{tuple(vectors.shape)}; the model\'s table is '
                f'[{self.num_classes}, {width}]: build them from the same '
                'sources (and options) as its table.')
        device = self.class_embedding.device
        self.class_embedding = torch.cat(
            [self.class_embedding, vectors.to(device)])
        self.unseen_mask = torch.cat(
            [self.unseen_mask,
             self.unseen_mask.new_ones(len(names))])
        self.class_names = (*self.class_names, *names)
        old = self.conv_seg
        new = nn.Conv2d(old.in_channels, old.out_channels + len(names), 1)
        nn.init.normal_(new.weight, 0, 0.01)  # mmseg's conv_seg init
        nn.init.zeros_(new.bias)
        with torch.no_grad():
            new.weight[:old.out_channels] = old.weight
            new.bias[:old.out_channels] = old.bias
        self.conv_seg = new.to(old.weight.device)
        self.num_classes = self.out_channels = new.out_channels

    def calibrate(self, logits: Tensor) -> Tensor:
        """Calibrated stacking (SPNet-c): ``self.calibration`` subtracted
        from the seen classes' logits ``[B, K, H, W]`` (0: unchanged)."""
        if not self.calibration:
            return logits
        return logits - self.calibration * (~self.unseen_mask).to(
            logits.dtype)[None, :, None, None]

    @property
    def unseen_ids(self) -> Tensor:
        return self.unseen_mask.nonzero().flatten()
