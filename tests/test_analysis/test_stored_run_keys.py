"""The stored runs of docs/toy_runs stay the runs of the shipped configs:
each run's key (tools/toy_table.py's hash of the resolved config) equals
the key of the config its name names, so that a campaign continued in a
later session pairs with them instead of refusing them (or retraining). A
change to a shipped config that changes what a run computes must re-key
or re-run the stored runs; one that does not (formatting, a recipe moved
to a base) must leave every key as it was."""
import glob
import json
import os.path as osp

import pytest
from e2e_utils import REPO

from mmseg_sign.analysis.toy_results import run_key

# reads every shipped config once
pytestmark = pytest.mark.slow

# runs made before their configs changed, kept for the record
# (docs/toy_results.md, "Choosing the recipe")
HISTORIC = {'choice_data3.json'}


def shipped_configs():
    return {
        osp.basename(p)[:-3]: p
        for p in glob.glob(
            osp.join(REPO, 'configs', '**', '*.py'), recursive=True)
        if '_base_' not in p
    }


def test_every_stored_run_is_its_configs_run():
    configs = shipped_configs()
    checked, wrong = 0, []
    for path in sorted(
            glob.glob(osp.join(REPO, 'docs', 'toy_runs', '*.json'))):
        if osp.basename(path) in HISTORIC:
            continue
        with open(path) as f:
            runs = json.load(f)
        for name, run in runs.items():
            stem = name.split('/')[0]  # a tagged run (+TAG) ran options
            if 'key' not in run or stem not in configs:
                continue
            checked += 1
            if run['key'] != run_key(configs[stem]):
                wrong.append(f'{osp.basename(path)}: {name}')
    assert not wrong, wrong
    assert checked >= 190  # the protocol and CamVid campaigns' runs
