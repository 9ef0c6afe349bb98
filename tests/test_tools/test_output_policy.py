"""One output policy for every tool that writes a file: an existing output
file is refused, before any work, unless ``--force`` (never when it is an
input). One case per tool, run as a user runs it."""
import os.path as osp
import sys

import pytest
import tool_server
import torch
from e2e_utils import REPO

# every test here starts a tool process
pytestmark = pytest.mark.slow

TOY = osp.join(REPO, 'configs', 'sign', 'sign_toy.py')
# each tool's command line with OUT as its output (the inputs need not
# exist: the output is checked first)
TOOLS = {
    'model_converters/efficientnet_lite2mmseg.py': ['lite0', 'OUT'],
    'dataset_converters/cagnet_word_vectors.py': [
        '--dataset', 'voc', '--fasttext', 'a.pkl', '--word2vec', 'b.pkl',
        '--out', 'OUT'
    ],
    'build_class_embeddings.py':
    ['--dataset', 'voc', '--source', 'v.kv', '--out', 'OUT'],
    'deployment/pytorch2onnx.py': [TOY, 'ckpt.pth', '--out', 'OUT'],
    'analysis/plot_ast_weights.py': ['--out', 'OUT'],
    'analysis/plot_calibration.py': ['sweep.json', '--out', 'OUT'],
    'analysis/pseudo_label_quality.py': [TOY, 'ckpt.pth', '--out', 'OUT'],
    'analysis/parity.py': [TOY, '--out', 'OUT'],
    'publish_model.py': ['in.pth', 'OUT', '--no-hash'],
    'toy_table.py': [TOY, '--report-only', '--out', 'OUT'],
}


def run(tmp_path, tool, args):
    return tool_server.run(
        [sys.executable, osp.join(REPO, 'tools', tool), *args],
        cwd=str(tmp_path),
        capture_output=True,
        text=True,
        timeout=300)


@pytest.mark.parametrize('tool', sorted(TOOLS))
def test_an_existing_output_file_is_refused(tmp_path, tool):
    out = tmp_path / 'existing.out'
    out.write_text('keep me')
    args = [str(out) if a == 'OUT' else a for a in TOOLS[tool]]
    proc = run(tmp_path, tool, args)
    assert proc.returncode != 0, proc.stdout + proc.stderr
    assert f'the output {out} exists' in proc.stderr, proc.stderr
    assert 'or --force to replace it' in proc.stderr
    assert 'Traceback' not in proc.stderr
    assert out.read_text() == 'keep me'


def test_force_replaces_the_output_but_never_an_input(tmp_path):
    out = tmp_path / 'lite0.pth'
    out.write_text('old')
    tool = 'model_converters/efficientnet_lite2mmseg.py'
    proc = run(tmp_path, tool, ['lite0', str(out), '--force'])
    assert proc.returncode == 0, proc.stderr
    assert 'stem.conv.weight' in torch.load(str(out))['state_dict']
    # --force never lets the output be the input
    proc = run(tmp_path, tool, [str(out), str(out), '--force'])
    assert proc.returncode != 0 and 'is the input weights' in proc.stderr
