"""Export a trained SIGN model to ONNX and compare ONNX Runtime with
PyTorch (``tools/deployment/pytorch2onnx.py`` is the command line).

The graph is the inference path of the model: backbone → SIM (``z = mu``,
eval mode) → C over all (seen + unseen) classes, with the class table and
the seen/unseen split of the checkpoint baked in (and the head's
``calibration``, if set). Its input ``img`` is the image as
``LoadImageFromFile`` gives it: float, 0-255, BGR, ``N × 3 × H × W``; the
model's data preprocessor runs inside the graph. Its output is ``logits``
(``N × K × H × W``, resized to the input size as mmseg's
``EncoderDecoder.inference`` does) or ``seg`` (``N × H × W`` int64, the
argmax). Needs no gensim (the class table is in the checkpoint).
"""
import os
import os.path as osp
import warnings
from typing import Optional, Sequence

import numpy as np
import torch
import torch.nn as nn

from ..apis.inference import init_model_checked
from ..engine.hooks.strict_checkpoint_hook import CheckpointMismatchError
from ..utils.atomic import atomic_write

OUTPUTS = ('logits', 'seg')
EXPORTERS = ('torchscript', 'dynamo')


class ExportError(ValueError):
    """The model or the request cannot be exported as asked."""


def load_model(config, checkpoint: str, cfg_options: Optional[dict] = None):
    """The segmentor of ``config`` with ``checkpoint``'s weights, on the
    CPU, in eval mode, checked for export (:func:`check_exportable`).

    A checkpoint that lacks or mismatches weights of the model is an error
    (as in ``tools/test.py``): a deployed graph must not hold random
    weights.

    Args:
        config (str | Config): the config the model was trained with.
        checkpoint (str): its checkpoint file.
        cfg_options (dict, optional): overrides merged into the config.

    Returns:
        nn.Module: the segmentor, ready to export.
    """
    from mmengine.model import revert_sync_batchnorm

    try:
        model = init_model_checked(config, checkpoint, 'cpu', cfg_options)
    except CheckpointMismatchError as err:
        raise ExportError(str(err)) from None
    model = revert_sync_batchnorm(model)
    model.eval()
    check_exportable(model)
    return model


def check_exportable(model) -> None:
    """Refuse, with the reason and the way out, what the exported graph
    would not reproduce.

    Args:
        model (nn.Module): the segmentor.

    Raises:
        ExportError: e.g. test-time augmentation or a slide test mode.
    """
    head = getattr(model, 'decode_head', None)
    if head is None or not hasattr(model, 'encode_decode'):
        raise ExportError(
            f'{type(model).__name__} is not an encoder-decoder segmentor '
            '(backbone, neck, decode_head); only those are exported.')
    if hasattr(head, 'require_table'):
        head.require_table()  # the class table (file or checkpoint)
    mode = model.test_cfg.get('mode', 'whole') if model.test_cfg else \
        'whole'
    if mode != 'whole':
        raise ExportError(
            f"model.test_cfg.mode={mode!r} cannot be exported: the graph "
            "runs the whole image at once. Export with --cfg-options "
            "model.test_cfg.mode=whole and run tiles yourself if needed.")
    pre = model.data_preprocessor
    for attr in ('mean', 'std', '_enable_normalize', 'channel_conversion'):
        if not hasattr(pre, attr):
            raise ExportError(
                f'{type(pre).__name__} is not a SegDataPreProcessor (it '
                f'has no {attr!r}); the graph reproduces only '
                "SegDataPreProcessor's channel order and mean / std.")
    if getattr(pre, 'test_cfg', None):
        raise ExportError(
            f'data_preprocessor.test_cfg={dict(pre.test_cfg)} pads test '
            'images, which the graph does not: export without it '
            '(--cfg-options model.data_preprocessor.test_cfg=None) and '
            'give the graph images of the padded size.')


class ONNXSegmentor(nn.Module):
    """The deployed function: ``img`` (float BGR 0-255, ``N × 3 × H × W``)
    → data preprocessor (channel order, mean / std) → backbone → SIM → C
    → logits ``N × K × H × W`` (or their argmax ``N × H × W``)."""

    def __init__(self, model, output: str = 'logits'):
        super().__init__()
        if output not in OUTPUTS:
            raise ExportError(f'output must be one of {OUTPUTS}, got '
                              f'{output!r}.')
        check_exportable(model)
        self.model = model.eval()
        self.output = output
        pre = model.data_preprocessor
        # bgr_to_rgb or rgb_to_bgr: either reverses the 3 channels
        self.flip_channels = bool(pre.channel_conversion)
        self.normalize = bool(pre._enable_normalize)
        if self.normalize:
            self.register_buffer(
                'mean',
                pre.mean.detach().float().clone().reshape(1, -1, 1, 1))
            self.register_buffer(
                'std',
                pre.std.detach().float().clone().reshape(1, -1, 1, 1))

    def forward(self, img: torch.Tensor) -> torch.Tensor:
        x = img
        if self.flip_channels:
            x = x.flip(1)
        if self.normalize:
            x = (x - self.mean) / self.std
        # img_shape as a torch.Size: predict_by_feat resizes the logits to
        # it (a traced size, so dynamic shapes stay dynamic)
        metas = [dict(img_shape=x.shape[2:], ori_shape=x.shape[2:])]
        logits = self.model.encode_decode(x, metas)
        if self.output == 'seg':
            return logits.argmax(dim=1)
        return logits


def default_shape(model) -> tuple:
    """The input size to trace when none is given.

    Args:
        model (nn.Module): the segmentor.

    Returns:
        tuple[int, int]: the data preprocessor's ``size`` (the crop).
    """
    size = getattr(model.data_preprocessor, 'size', None)
    if not size:
        raise ExportError(
            'No --shape H W given and the data preprocessor has no `size` '
            'to default to: give --shape (with --dynamic, the example '
            'size to trace).')
    return tuple(int(s) for s in size)


def export(model,
           out: str,
           shape: Sequence[int],
           dynamic: bool = False,
           output: str = 'logits',
           opset: Optional[int] = None,
           exporter: str = 'torchscript') -> str:
    """Write ``model`` as ONNX and check it with ``onnx.checker``.

    Args:
        model (nn.Module): the segmentor (:func:`load_model`).
        out (str): the ``.onnx`` file to write.
        shape (Sequence[int]): ``(H, W)`` of the ``1 × 3 × H × W`` example
            traced.
        dynamic (bool): batch, height and width dynamic.
        output (str): ``'logits'`` (``N × K × H × W``) or ``'seg'``
            (``N × H × W`` class indices).
        opset (int, optional): the ONNX opset (default: the exporter's).
        exporter (str): ``'torchscript'`` or ``'dynamo'``.

    Returns:
        str: ``out``.
    """
    try:
        import onnx
    except ImportError as err:
        raise ImportError(
            "ONNX export needs onnx: pip install 'mmseg-sign[deploy]' (or "
            'pip install onnx onnxruntime)') from err
    if exporter not in EXPORTERS:
        raise ExportError(f'exporter must be one of {EXPORTERS}, got '
                          f'{exporter!r}.')
    wrapper = ONNXSegmentor(model, output).eval()
    h, w = shape
    example = torch.randint(
        0, 256, (1, 3, h, w),
        generator=torch.Generator().manual_seed(0)).float()
    kwargs = dict(input_names=['img'], output_names=[output])
    if exporter == 'torchscript':
        kwargs.update(
            dynamo=False, do_constant_folding=True, opset_version=opset or 17)
        if dynamic:
            out_axes = {0: 'batch', 2: 'height', 3: 'width'} \
                if output == 'logits' else {0: 'batch', 1: 'height',
                                            2: 'width'}
            kwargs['dynamic_axes'] = {
                'img': {
                    0: 'batch',
                    2: 'height',
                    3: 'width'
                },
                output: out_axes
            }
    else:
        try:
            import onnxscript  # noqa: F401
        except ImportError as err:
            raise ImportError(
                "--exporter dynamo needs onnxscript: pip install "
                "'mmseg-sign[deploy]' (or pip install onnxscript)") from err
        from torch.export import Dim
        kwargs.update(
            dynamo=True, external_data=False, opset_version=opset or 18)
        if dynamic:
            kwargs['dynamic_shapes'] = {
                'img': {
                    0: Dim.DYNAMIC,
                    2: Dim.DYNAMIC,
                    3: Dim.DYNAMIC
                }
            }

    def write(path: str) -> None:  # on a temporary file beside ``out``
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter('ignore')
            try:
                program = torch.onnx.export(wrapper, (example, ), path,
                                            **kwargs)
            except Exception as err:
                raise ExportError(
                    f'torch.onnx.export ({exporter}) failed on '
                    f'{type(model).__name__}: {type(err).__name__}: {err}\n'
                    'An op of the backbone or neck may have no ONNX form '
                    '(e.g. an mmcv op without an ONNX symbolic): try the '
                    'other --exporter, another --opset, or another '
                    'backbone.') from err
        if exporter == 'dynamo' and program is not None and \
                not osp.getsize(path):
            program.save(path)
        proto = onnx.load(path)
        _set_io_shapes(proto, model.decode_head.num_classes, output,
                       None if dynamic else (h, w))
        onnx.checker.check_model(proto)
        onnx.save(proto, path)

    # atomic: a failed export leaves no partial graph and an old file as is
    return atomic_write(out, write)


def _set_io_shapes(proto, num_classes: int, output: str, size=None):
    """Name the graph's input / output dimensions the same way for both
    exporters (``batch``, ``height``, ``width``; values for a fixed
    ``size``), with the class count ``K`` as a number."""
    h, w = size or ('height', 'width')
    n = 1 if size else 'batch'
    dims = {
        'img': (n, 3, h, w),
        output: (n, num_classes, h, w) if output == 'logits' else (n, h, w)
    }
    for value in (*proto.graph.input, *proto.graph.output):
        shape = value.type.tensor_type.shape
        for dim, want in zip(shape.dim, dims[value.name]):
            if isinstance(want, int):
                dim.dim_value = want
            else:
                dim.dim_param = want


# ---------------------------------------------------------------- verify
def run_onnx(path: str):
    """``img (numpy) -> output (numpy)`` with ONNX Runtime on the CPU.

    Args:
        path (str): the ``.onnx`` file.

    Returns:
        Callable[[np.ndarray], np.ndarray]: the graph as a function.
    """
    try:
        import onnxruntime as ort
    except ImportError as err:
        raise ImportError(
            "--verify needs onnxruntime: pip install 'mmseg-sign[deploy]' "
            '(or pip install onnxruntime)') from err
    options = ort.SessionOptions()
    options.intra_op_num_threads = int(
        os.environ.get('OMP_NUM_THREADS', 0) or 0)
    sess = ort.InferenceSession(
        path, options, providers=['CPUExecutionProvider'])
    name = sess.get_inputs()[0].name

    def run(img: np.ndarray) -> np.ndarray:
        return sess.run(None, {name: img.astype(np.float32)})[0]

    run.input_shape = sess.get_inputs()[0].shape
    return run


def torch_logits(model, inputs: torch.Tensor, data_sample) -> torch.Tensor:
    """PyTorch's logits ``[K, H, W]`` for one image of the test pipeline
    (``inputs`` ``3 × H × W`` uint8), through mmseg's own data preprocessor
    and ``EncoderDecoder.inference``.

    Args:
        model (nn.Module): the segmentor.
        inputs (Tensor): the image ``[3, H, W]`` uint8.
        data_sample (SegDataSample): its sample (meta information).

    Returns:
        Tensor: ``[K, H, W]``.
    """
    with torch.no_grad():
        data = model.data_preprocessor(
            dict(inputs=[inputs], data_samples=[data_sample]), False)
        metas = [s.metainfo for s in data['data_samples']]
        return model.inference(data['inputs'], metas)[0]


def compare(model, onnx_path: str, images, output: str = 'logits') -> dict:
    """Run test images through PyTorch and ONNX Runtime.

    Args:
        model (nn.Module): the exported segmentor.
        onnx_path (str): the graph.
        images (Iterable): ``(inputs, data_sample)`` pairs of the test
            pipeline (:func:`test_images`).
        output (str): the graph's output, ``'logits'`` or ``'seg'``.

    Returns:
        dict: ``max_abs_diff`` of the logits (``nan`` for ``'seg'``),
        ``agreement`` (percent of pixels with the same argmax), ``images``
        compared, ``pixels``, ``skipped`` (sizes other than a fixed-shape
        graph's).
    """
    run = run_onnx(onnx_path)
    fixed = [d if isinstance(d, int) else None for d in run.input_shape[2:]]
    max_diff, same, total, n, skipped = 0.0, 0, 0, 0, 0
    for inputs, sample in images:
        if any(f is not None and f != s
               for f, s in zip(fixed, inputs.shape[1:])):
            skipped += 1
            continue
        ref = torch_logits(model, inputs, sample)
        got = run(inputs[None].float().numpy())[0]
        if output == 'logits':
            max_diff = max(max_diff, float(np.abs(got - ref.numpy()).max()))
            got = got.argmax(0)
        same += int((got == ref.argmax(0).numpy()).sum())
        total += got.size
        n += 1
    if not n:
        raise ExportError(
            f'None of the {skipped} test images has the fixed input size '
            f'{fixed} of {onnx_path}: export with --dynamic, or with '
            '--shape set to the test images\' size.')
    return dict(
        max_abs_diff=max_diff if output == 'logits' else float('nan'),
        agreement=100.0 * same / total,
        images=n,
        pixels=total,
        skipped=skipped)


def test_images(cfg, limit: int = 0):
    """``(inputs, data_sample)`` of the config's test set (the first
    ``limit``; 0: all).

    Args:
        cfg (Config): the config.
        limit (int): how many (0: all).

    Returns:
        Iterator[tuple]: ``(inputs, data_sample)`` per image.
    """
    from mmseg.registry import DATASETS
    dataset = DATASETS.build(cfg.test_dataloader.dataset)
    count = len(dataset) if limit <= 0 else min(limit, len(dataset))
    for i in range(count):
        item = dataset[i]
        yield item['inputs'], item['data_samples']
