# Copyright (c) OpenMMLab. All rights reserved.
"""Class embeddings from the text tower of a local CLIP checkpoint.

A class vector is the mean over prompt templates (``'a photo of a {}.'``,
...) of the L2-normalised CLIP text embeddings of the filled-in prompts,
L2-normalised again (the zero-shot classifier recipe of CLIP). The
checkpoint is a directory written by Hugging Face ``save_pretrained``
(``config.json``, the weights and the tokenizer files), read with
``local_files_only=True``: nothing is ever downloaded. ``transformers``
is imported only when a checkpoint is loaded (``pip install
'mmseg-sign[clip]'``).

Example (make such a directory once, on a machine with internet)::

    from transformers import CLIPModel, CLIPTokenizer
    name = 'openai/clip-vit-base-patch32'
    CLIPModel.from_pretrained(name).save_pretrained('clip-vit-b32')
    CLIPTokenizer.from_pretrained(name).save_pretrained('clip-vit-b32')
"""
import json
import os
import os.path as osp
import re
from typing import Iterable, List, Optional, Sequence, Union

import numpy as np

#: Source format name (``--source clip:PATH``, ``dict(format='clip')``).
CLIP_FORMAT = 'clip'

#: Default prompt templates (``{}`` is the class name): short scene-level
#: variants of CLIP's ImageNet prompts, suited to things and stuff.
DEFAULT_CLIP_TEMPLATES = (
    'a photo of a {}.',
    'a photo of the {}.',
    'a photo of a small {}.',
    'a photo of a large {}.',
    'there is a {} in the scene.',
    'there is the {} in the scene.',
    'a cropped photo of the {}.',
)

_INSTALL_HINT = ("pip install 'mmseg-sign[clip]' (or pip install "
                 "transformers)")
_EXPECTED = ('a directory written by save_pretrained with config.json '
             '(model_type "clip" or "clip_text_model"), the weights '
             '(model.safetensors or pytorch_model.bin) and the tokenizer '
             'files (tokenizer.json, or vocab.json + merges.txt)')
_SAVE_HINT = ('Make one on a machine with internet access, e.g. '
              "CLIPModel.from_pretrained('openai/clip-vit-base-patch32')"
              ".save_pretrained(PATH) and the same with CLIPTokenizer.")
_WEIGHT_FILES = ('model.safetensors', 'model.safetensors.index.json',
                 'pytorch_model.bin', 'pytorch_model.bin.index.json')
_CLIP_MODEL_TYPES = ('clip', 'clip_text_model')
_SPACES = re.compile(r'[\s\-_]+')


def clip_class_text(name: str) -> str:
    """The text put into the templates for a class name: underscores and
    dashes become spaces (``'dining_table'`` -> ``'dining table'``).

    Args:
        name (str): a class name.

    Returns:
        str: its text.
    """
    text = _SPACES.sub(' ', str(name)).strip()
    if not text:
        raise ValueError(f'Class name {name!r} has no text for CLIP')
    return text


def check_templates(templates: Optional[Iterable[str]]) -> List[str]:
    """Return the templates as a list (default
    :data:`DEFAULT_CLIP_TEMPLATES`); each must hold one ``{}``.

    Args:
        templates (Iterable[str], optional): prompt templates.

    Returns:
        list[str]: the templates.
    """
    if templates is None:
        return list(DEFAULT_CLIP_TEMPLATES)
    if isinstance(templates, str):
        templates = [templates]
    templates = list(templates)
    if not templates:
        raise ValueError('No CLIP prompt templates given')
    for template in templates:
        ok = isinstance(template, str) and template.count('{}') == 1
        if ok:
            try:
                ok = template.format('x') == template.replace('{}', 'x')
            except (IndexError, KeyError, ValueError):
                ok = False
        if not ok:
            raise ValueError(
                f'CLIP prompt template {template!r} must contain exactly '
                "one '{}' (the class name) and no other braces, e.g. "
                "'a photo of a {}.'")
    return templates


def read_templates(path: Union[str, os.PathLike]) -> List[str]:
    """Templates from a file: one a line; blank lines and ``#`` comments
    are skipped.

    Args:
        path (str): the templates file.

    Returns:
        list[str]: the templates.
    """
    with open(path, encoding='utf-8') as f:
        lines = [line.strip() for line in f]
    templates = [t for t in lines if t and not t.startswith('#')]
    if not templates:
        raise ValueError(f'No CLIP prompt templates in {os.fspath(path)!r}')
    return check_templates(templates)


def _import_transformers():
    try:
        import transformers
    except ImportError as err:
        raise ImportError(
            'CLIP class embeddings need the Hugging Face transformers '
            f'package, which is not installed ({err}); {_INSTALL_HINT}.'
        ) from None
    return transformers


def _check_checkpoint_dir(path: str) -> str:
    """Validate the layout of a checkpoint directory; return its
    ``model_type``."""
    if not osp.exists(path):
        hub = ''
        if re.fullmatch(r'[\w.-]+/[\w.-]+', path):
            hub = (' It looks like a Hugging Face Hub id; nothing is '
                   'downloaded at run time. ')
        raise FileNotFoundError(
            f'CLIP checkpoint not found: {path!r}.{hub} Expected {_EXPECTED}.'
            f' {_SAVE_HINT}')
    if not osp.isdir(path):
        raise ValueError(f'CLIP checkpoint {path!r} is a file, not a '
                         f'directory. Expected {_EXPECTED}. {_SAVE_HINT}')
    config_path = osp.join(path, 'config.json')
    if not osp.isfile(config_path):
        raise ValueError(f'{path!r} is not a CLIP checkpoint: it has no '
                         f'config.json. Expected {_EXPECTED}. {_SAVE_HINT}')
    try:
        with open(config_path, encoding='utf-8') as f:
            model_type = json.load(f).get('model_type')
    except (ValueError, AttributeError) as err:
        raise ValueError(f'{config_path!r} is not a valid config.json '
                         f'({err}). Expected {_EXPECTED}.') from None
    if model_type not in _CLIP_MODEL_TYPES:
        raise ValueError(
            f'{path!r} is not a CLIP checkpoint: config.json has model_type '
            f'{model_type!r}, expected one of {_CLIP_MODEL_TYPES}. '
            f'Expected {_EXPECTED}.')
    if not any(osp.isfile(osp.join(path, f)) for f in _WEIGHT_FILES):
        raise ValueError(
            f'{path!r} has no model weights (none of {_WEIGHT_FILES}). '
            f'Expected {_EXPECTED}. {_SAVE_HINT}')
    has_tokenizer = osp.isfile(osp.join(path, 'tokenizer.json')) or all(
        osp.isfile(osp.join(path, f)) for f in ('vocab.json', 'merges.txt'))
    if not has_tokenizer:
        raise ValueError(
            f'{path!r} has no tokenizer files (tokenizer.json, or '
            'vocab.json + merges.txt): save the tokenizer into the same '
            "directory, e.g. CLIPTokenizer.from_pretrained("
            "'openai/clip-vit-base-patch32').save_pretrained(PATH).")
    return model_type


class CLIPTextEncoder:
    """The text tower of a local CLIP checkpoint (eval mode, no grad).

    Args:
        path (str): Directory written by ``save_pretrained``: a full
            ``CLIPModel`` (its text tower and ``text_projection`` are
            used), a ``CLIPTextModelWithProjection`` or a ``CLIPTextModel``
            (no projection: the pooled EOS output is used), plus the
            tokenizer files.
        device (str): Torch device. Defaults to ``'cpu'``.

    Attributes:
        embed_dim (int): Output width (the projection dim, or the text
            hidden size without a projection).
        has_projection (bool): Whether ``text_projection`` is applied.
    """

    def __init__(self, path: Union[str, os.PathLike], device: str = 'cpu'):
        self.path = os.fspath(path)
        self.device = device
        model_type = _check_checkpoint_dir(self.path)
        transformers = _import_transformers()
        from transformers.utils import logging as hf_logging
        verbosity = hf_logging.get_verbosity()
        bars = hf_logging.is_progress_bar_enabled()
        hf_logging.set_verbosity_error()  # e.g. unused vision weights
        hf_logging.disable_progress_bar()
        try:
            self._load(transformers, model_type)
        except ImportError:
            raise
        except Exception as err:  # OSError, SafetensorError, shapes, ...
            raise ValueError(
                f'Cannot load the CLIP checkpoint {self.path!r} '
                f'({type(err).__name__}: {err}). Expected {_EXPECTED}.'
            ) from err
        finally:
            hf_logging.set_verbosity(verbosity)
            if bars:
                hf_logging.enable_progress_bar()

    def _load(self, transformers, model_type: str) -> None:
        if model_type == 'clip':
            # a full CLIPModel: the projection width is the top-level one
            config = transformers.CLIPConfig.from_pretrained(
                self.path, local_files_only=True)
            text_config = config.text_config
            text_config.projection_dim = config.projection_dim
        else:
            text_config = transformers.CLIPTextConfig.from_pretrained(
                self.path, local_files_only=True)
        self.tokenizer = transformers.AutoTokenizer.from_pretrained(
            self.path, local_files_only=True)
        model, info = \
            transformers.CLIPTextModelWithProjection.from_pretrained(
                self.path,
                config=text_config,
                local_files_only=True,
                output_loading_info=True)
        missing = sorted(info.get('missing_keys', ()))
        mismatched = list(info.get('mismatched_keys', ()))
        broken = [k for k in missing if not k.startswith('text_projection')]
        if broken or mismatched:
            raise ValueError(
                f'the checkpoint lacks or mismatches text-tower weights '
                f'(missing: {broken[:5]}, mismatched: {mismatched[:5]})')
        self.has_projection = not any(
            k.startswith('text_projection') for k in missing)
        eos = getattr(text_config, 'eos_token_id', None)
        if eos not in (2, self.tokenizer.eos_token_id):
            # (2 = configs from before transformers#24773: argmax pooling)
            raise ValueError(
                f'config.json has eos_token_id={eos} but the tokenizer\'s '
                f'end-of-text token has id {self.tokenizer.eos_token_id}; '
                'the text embedding would be pooled at the wrong token')
        self.model = model.float().to(self.device).eval()
        self.max_length = int(text_config.max_position_embeddings)
        self.embed_dim = int(text_config.projection_dim if self.
                             has_projection else text_config.hidden_size)

    def __repr__(self) -> str:
        kind = 'projection' if self.has_projection else 'pooled output'
        return (f'CLIPTextEncoder({self.path!r}, {self.embed_dim}-d '
                f'{kind})')

    def encode(self,
               texts: Sequence[str],
               batch_size: int = 256) -> np.ndarray:
        """L2-normalised text embeddings.

        Args:
            texts (Sequence[str]): N prompts, used as written.
            batch_size (int): Prompts per forward pass.

        Returns:
            np.ndarray: float64 ``[N, embed_dim]``, unit rows.
        """
        import torch
        texts = list(texts)
        lengths = [len(ids) for ids in self.tokenizer(texts)['input_ids']]
        for text, length in zip(texts, lengths):
            if length > self.max_length:
                raise ValueError(
                    f'The prompt {text!r} has {length} tokens, more than '
                    f'the {self.max_length} of the CLIP model {self.path!r}'
                    '; shorten the class name or the template.')
        step = max(1, int(batch_size))
        out = []
        with torch.no_grad():
            for start in range(0, len(texts), step):
                batch = self.tokenizer(
                    texts[start:start + step],
                    padding=True,
                    return_tensors='pt').to(self.device)
                # [B, C]: the final hidden state at the end-of-text token
                pooled = self.model.text_model(
                    input_ids=batch['input_ids'],
                    attention_mask=batch['attention_mask']).pooler_output
                if self.has_projection:
                    pooled = self.model.text_projection(pooled)  # [B, D]
                out.append(pooled.float().cpu().numpy().astype(np.float64))
        emb = np.concatenate(
            out, axis=0) if out else np.zeros((0, self.embed_dim))
        norms = np.linalg.norm(emb, axis=1, keepdims=True)
        if not np.isfinite(emb).all() or (norms == 0).any():
            raise ValueError(f'The CLIP model {self.path!r} gave a zero or '
                             'non-finite text embedding')
        return emb / norms


def load_clip_text_encoder(path: Union[str, os.PathLike],
                           device: str = 'cpu') -> CLIPTextEncoder:
    """Load the text tower of a local CLIP checkpoint (see
    :class:`CLIPTextEncoder`); never downloads.

    Args:
        path (str): a local CLIP checkpoint directory.
        device (str): where it runs.

    Returns:
        CLIPTextEncoder: the encoder.
    """
    return CLIPTextEncoder(path, device)


def clip_text_embeddings(class_names: Sequence[str],
                         encoder: Union[CLIPTextEncoder, str, os.PathLike],
                         templates: Optional[Iterable[str]] = None,
                         batch_size: int = 256,
                         device: str = 'cpu') -> np.ndarray:
    """CLIP class embeddings, averaged over prompt templates.

    Each prompt ``template.format(text)`` (``text`` from
    :func:`clip_class_text`) is embedded and L2-normalised; a class row is
    the mean over templates, L2-normalised.

    Args:
        class_names (Sequence[str]): K class names (or texts).
        encoder (CLIPTextEncoder | str): A loaded encoder or a checkpoint
            directory.
        templates (Iterable[str], optional): T templates with one ``{}``.
            Defaults to :data:`DEFAULT_CLIP_TEMPLATES`.
        batch_size (int): Prompts per forward pass. Defaults to 256.
        device (str): Device when ``encoder`` is a path.

    Returns:
        np.ndarray: float64 ``[K, embed_dim]``, unit rows.
    """
    templates = check_templates(templates)
    texts = [clip_class_text(name) for name in class_names]
    if not isinstance(encoder, CLIPTextEncoder):
        encoder = CLIPTextEncoder(encoder, device)
    prompts = [t.format(text) for text in texts for t in templates]
    emb = encoder.encode(prompts, batch_size)  # [K * T, D]
    mean = emb.reshape(len(texts), len(templates), -1).mean(axis=1)
    norms = np.linalg.norm(mean, axis=1, keepdims=True)
    if (norms == 0).any():
        idx = int(np.flatnonzero(norms[:, 0] == 0)[0])
        raise ValueError(f'Class {class_names[idx]!r}: its prompt embeddings '
                         'cancel out (zero mean); use other templates')
    return mean / norms
