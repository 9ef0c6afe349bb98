"""configs/sign/README.md (the model card) and configs/sign/metafile.yml
agree with each other and with the repository."""
import os.path as osp
import re

import pytest
import yaml

REPO = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
CARD = osp.join(REPO, 'configs', 'sign', 'README.md')
META = osp.join(REPO, 'configs', 'sign', 'metafile.yml')


def card_rows():
    """``{config path: [cells]}`` of the card's result tables."""
    rows = {}
    for line in open(CARD, encoding='utf-8'):
        link = re.search(r'\[config\]\(([^)]+)\)', line)
        if line.startswith('|') and link:
            cells = [c.strip() for c in line.strip().strip('|').split('|')]
            path = osp.normpath(osp.join('configs', 'sign', link.group(1)))
            rows.setdefault(path, []).append(cells)
    return rows


def assert_means(metrics, stored, name):
    """A metafile entry's Metrics are the means of its stored runs (the
    metafile holds two decimals)."""
    for key in ('mIoU_seen', 'mIoU_unseen', 'hIoU'):
        mean = sum(r[key] for r in stored) / len(stored)
        assert metrics[key] == pytest.approx(mean, abs=0.005), (name, key)


def zoo_summary(stored):
    """The README model zoo's cell for runs: seen / unseen / harmonic mIoU,
    each mean ± 95 % CI."""
    from mmseg_sign.analysis.stats import mean_ci
    return ' / '.join(
        str(mean_ci([r[k] for r in stored]))
        for k in ('mIoU_seen', 'mIoU_unseen', 'hIoU'))


def test_metafile_entries_exist_and_release_no_weights():
    meta = yaml.safe_load(open(META))
    index = yaml.safe_load(open(osp.join(REPO, 'model-index.yml')))
    assert 'configs/sign/metafile.yml' in index['Import']
    (collection, ) = meta['Collections']
    assert osp.isfile(osp.join(REPO, collection['README']))
    names = [m['Name'] for m in meta['Models']]
    assert len(names) == len(set(names))
    for model in meta['Models']:
        assert model['In Collection'] == collection['Name']
        assert osp.isfile(osp.join(REPO, model['Config'])), model['Config']
        assert osp.basename(model['Config']) == model['Name'] + '.py'
        assert 'Weights' not in model  # no checkpoint is released


def test_card_and_metafile_list_the_same_configs_and_numbers():
    rows = card_rows()
    meta = {m['Config']: m for m in yaml.safe_load(open(META))['Models']}
    for path in rows:
        assert osp.isfile(osp.join(REPO, path)), path
    # every config of the card has an entry, and every entry a card row,
    # except sign_ade20k (no published numbers: a sentence in the card)
    assert set(rows) == set(meta) - {'configs/sign/sign_ade20k.py'}
    assert 'sign_ade20k.py' in open(CARD, encoding='utf-8').read()
    measured = 0
    for path, model in meta.items():
        if 'Results' not in model:
            continue
        metrics = model['Results'][0]['Metrics']
        want = [
            f"{metrics[k]:.2f}" for k in ('mIoU_seen', 'mIoU_unseen', 'hIoU')
        ]
        # the card's cells: "mean ± std"; the metafile holds the means
        means = [[c.split(' ± ')[0] for c in cells[4:7]]
                 for cells in rows[path]]
        assert want in means, (path, want, means)
        measured += 1
    # the toy and CamVid rows measured with this code (3 toy, 3 CamVid
    # from scratch, 4 CamVid with ImageNet features: SIGN after transfer,
    # + ST, + AST, and SIGN without the SIM + AST)
    assert measured == 10
    for cells in (c for cs in rows.values() for c in cs):
        assert cells[-1] == 'no checkpoint released'


def test_baselines_metafile_lists_every_baseline_config():
    """configs/baselines/metafile.yml (for mim): one entry per SPNet /
    ZS3Net / CaGNet config, in its method's collection, no weights."""
    import glob
    path = osp.join(REPO, 'configs', 'baselines', 'metafile.yml')
    index = yaml.safe_load(open(osp.join(REPO, 'model-index.yml')))
    assert 'configs/baselines/metafile.yml' in index['Import']
    meta = yaml.safe_load(open(path))
    collections = {c['Name'] for c in meta['Collections']}
    assert collections == {'SPNet', 'ZS3Net', 'CaGNet'}
    listed = set()
    for model in meta['Models']:
        assert model['In Collection'] in collections
        assert model['Name'].startswith(model['In Collection'].lower())
        assert osp.basename(model['Config']) == model['Name'] + '.py'
        assert 'Weights' not in model
        listed.add(model['Config'])
    # not Table 1 methods: the supervised reference points (the toy FCN,
    # CamVid's fully supervised ceiling)
    shipped = {
        osp.relpath(p, REPO)
        for p in glob.glob(osp.join(REPO, 'configs', 'baselines', '*.py'))
        if 'fcn' not in p and 'supervised' not in p
    }
    assert listed == shipped


def test_baselines_toy_results_are_the_stored_runs_means():
    """The toy Results of configs/baselines/metafile.yml are the means of
    the runs kept in docs/toy_runs/protocol_data0.json (training seeds
    0-9, data seed 0), recomputed here from the runs themselves."""
    import json
    runs = json.load(
        open(osp.join(REPO, 'docs', 'toy_runs', 'protocol_data0.json')))
    meta = yaml.safe_load(
        open(osp.join(REPO, 'configs', 'baselines', 'metafile.yml')))
    stage = dict(
        spnet_toy='end',
        zs3net_toy_st='self_train',
        cagnet_toy_st='self_train')
    # the Lite0 entries: test_camvid_imagenet_metafile_follows_the_stored_runs
    with_results = {
        m['Name']: m['Results'][0]['Metrics']
        for m in meta['Models']
        if 'Results' in m and m['Name'] not in LITE0_SOURCES
    }
    assert set(with_results) == set(stage)
    for name, metrics in with_results.items():
        assert_means(metrics,
                     [runs[f'{name}/0/{s}'][stage[name]] for s in range(10)],
                     name)


GPU_CHECKS = {  # stored runs → (A, B, stage, the difference quoted)
    'gpu_h200_data0.json': [
        ('sign_toy', 'sign_toy+cpu', 'self_train', '+1.02 ± 3.88'),
        ('sign_toy', 'sign_toy+cpu', 'transfer', '+0.87 ± 3.85'),
        ('sign_toy+bfloat16', 'sign_toy', 'self_train', '−0.58 ± 2.90')],
    'gpu_h100_data0.json': [
        ('sign_toy', 'sign_toy+cpu', 'self_train', '+1.44 ± 4.87'),
        ('sign_toy', 'sign_toy+cpu', 'transfer', '+1.03 ± 3.71')],
}


@pytest.mark.parametrize('stored', sorted(GPU_CHECKS))
def test_gpu_claims_are_the_stored_runs(stored):
    """docs/gpu.md's answers (an H200, re-checked on an H100)
    recomputed from the runs each call stored (docs/toy_runs/gpu_*.json):
    the paired GPU − CPU (and bf16 − fp32) differences quoted, and the
    claim that the GPU machine's CPU runs equal the protocol's CPU runs
    value for value."""
    import json

    from mmseg_sign.analysis.stats import paired_difference
    runs = json.load(open(osp.join(REPO, 'docs', 'toy_runs', stored)))
    protocol = json.load(
        open(osp.join(REPO, 'docs', 'toy_runs', 'protocol_data0.json')))
    doc = open(osp.join(REPO, 'docs', 'gpu.md')).read()

    def h(stem, stage):
        return [runs[f'{stem}/0/{s}'][stage]['hIoU'] for s in range(10)]

    for a, b, stage, quoted in GPU_CHECKS[stored]:
        d = paired_difference(h(a, stage), h(b, stage)).diff
        text = f'{d.mean:+.2f} ± {d.half:.2f}'.replace('-', '−')
        assert text == quoted and quoted in doc, (a, b, stage, text)
    for s in range(10):
        cpu, here = runs[f'sign_toy+cpu/0/{s}'], protocol[f'sign_toy/0/{s}']
        for stage in ('train', 'transfer', 'self_train'):
            # (the H100 call's runs also keep the 10-class mIoU)
            got = {k: v for k, v in cpu[stage].items() if k != 'mIoU'}
            assert got == here[stage], (s, stage)


def test_camvid_results_are_the_stored_runs_means():
    """The CamVid Results of configs/sign/metafile.yml (and so the card's
    rows) are the means over training seeds 0-4 of the runs kept in
    docs/toy_runs/camvid_protocol.json, recomputed here; the
    transfer-only entry is ``sign_camvid``'s transfer stage (the same first
    two stages, the same run). docs/camvid.md quotes the paired SIGN + AST
    − ZS3 + ST difference that the runs give."""
    import json

    from mmseg_sign.analysis.stats import paired_difference
    runs = json.load(
        open(osp.join(REPO, 'docs', 'toy_runs', 'camvid_protocol.json')))
    meta = {m['Name']: m for m in yaml.safe_load(open(META))['Models']}
    source = {
        'sign_camvid': ('sign_camvid', 'self_train'),
        'sign_camvid_st': ('sign_camvid_st', 'self_train'),
        'sign_camvid_transfer-only': ('sign_camvid', 'transfer')
    }
    for name, (stem, stage) in source.items():
        assert_means(meta[name]['Results'][0]['Metrics'],
                     [runs[f'{stem}/own/{s}'][stage] for s in range(5)], name)
    # sign_camvid_st trains sign_camvid's first two stages to the bit
    for s in range(5):
        assert runs[f'sign_camvid_st/own/{s}']['transfer'] == \
            runs[f'sign_camvid/own/{s}']['transfer'], s

    def h(stem, stage):
        return [runs[f'{stem}/own/{s}'][stage]['hIoU'] for s in range(5)]

    d = paired_difference(
        h('sign_camvid', 'self_train'), h('zs3net_camvid_st',
                                          'self_train')).diff
    quoted = f'{d.mean:+.2f} ± {d.half:.2f}'.replace('-', '−')
    assert quoted in open(osp.join(REPO, 'docs', 'camvid.md')).read(), \
        quoted


def test_camvid_imagenet_ceiling_is_the_stored_runs():
    """The CamVid ceiling: the fully supervised EfficientNet-Lite0 recipe's
    runs kept in docs/toy_runs/camvid_lite0_ceiling.json (training seeds
    0-4 on val) each reach 55 mIoU with no class below 10 IoU, and the
    means docs/camvid.md and the README quote are theirs."""
    import json

    from mmseg_sign.analysis.stats import mean_ci
    runs = json.load(
        open(osp.join(REPO, 'docs', 'toy_runs', 'camvid_lite0_ceiling.json')))
    stem = 'supervised_lite0_camvid-480x360'
    ends = [runs[f'{stem}/own/{s}']['end'] for s in range(5)]
    classes = [k for k in ends[0] if k.startswith('IoU.')]
    assert len(classes) == 10
    for end in ends:
        assert end['mIoU'] >= 55 and min(end[c] for c in classes) >= 10
    doc = open(osp.join(REPO, 'docs', 'camvid.md')).read()
    readme = open(osp.join(REPO, 'README.md')).read()
    for key in ('mIoU', 'mIoU_seen', 'mIoU_unseen', 'hIoU', *classes):
        quoted = str(mean_ci([e[key] for e in ends]))
        assert f'| {quoted} ' in doc, (key, quoted)
    summary = zoo_summary(ends)
    assert summary in readme, summary


def test_camvid_imagenet_comparison_quotes_the_stored_runs():
    """The Lite0 CamVid comparison: docs/camvid.md's CPU table and paired
    differences are those of the runs kept in
    docs/toy_runs/camvid_lite0_protocol.json (the ceiling's in
    camvid_lite0_ceiling.json), over the protocol's training seeds 0-4
    (every row has them), recomputed here with tools/toy_table.py's
    markdown. The seeds trained after them (5-9, not every row) are in
    the opening table, which test_camvid_opening_table_is_the_stored_runs
    recomputes over every stored seed."""
    import json

    from mmseg_sign.analysis.toy_markdown import comparison, table
    runs = {}
    for name in ('camvid_lite0_protocol.json', 'camvid_lite0_ceiling.json'):
        runs.update(json.load(open(osp.join(REPO, 'docs', 'toy_runs', name))))
    rows = {
        'SPNet': ('spnet_lite0_camvid-480x360', 'end'),
        'ZS3': ('zs3net_lite0_camvid-480x360_st', 'transfer'),
        'ZS3 + ST': ('zs3net_lite0_camvid-480x360_st', 'self_train'),
        'CaGNet': ('cagnet_lite0_camvid-480x360_st', 'transfer'),
        'CaGNet + ST': ('cagnet_lite0_camvid-480x360_st', 'self_train'),
        'SIGN': ('sign_lite0_camvid-480x360', 'transfer'),
        'SIGN + ST': ('sign_lite0_camvid-480x360_st', 'self_train'),
        'SIGN + AST': ('sign_lite0_camvid-480x360', 'self_train')
    }
    seeds = [
        s for s in range(5)
        if all(f'{stem}/own/{s}' in runs for stem, _ in rows.values())
    ]
    assert seeds == list(range(5)), seeds
    rows['Supervised (ceiling)'] = ('supervised_lite0_camvid-480x360', 'end')
    doc = open(osp.join(REPO, 'docs', 'camvid.md'), encoding='utf-8').read()
    lines = table(runs, rows, ['own'], seeds)
    assert len(lines) == 2 + len(rows)
    for line in lines[2:]:
        cells = [c.strip() for c in line.strip('|').split('|')]
        # label, n, seen, unseen, harmonic, sd (harmonic) as the doc has them
        label = cells[0] + (f', seeds 0-{seeds[-1]}'
                            if cells[0].startswith('Supervised') else '')
        quoted = '| ' + ' | '.join([label, *cells[1:6]]) + ' |'
        assert quoted in doc, quoted
    pairs = [('SIGN', 'ZS3'), ('SIGN', 'CaGNet'), ('SIGN + AST', 'ZS3 + ST'),
             ('SIGN + AST', 'CaGNet + ST'), ('SIGN + AST', 'SIGN + ST')]
    for line in comparison(runs, rows, pairs, ['own'], seeds):
        cells = [c.strip() for c in line.strip('|').split('|')]
        if len(cells) > 3 and cells[1] == 'harmonic mIoU':
            diff = cells[3].replace('-', '−')
            diff = diff if diff.startswith('−') else '+' + diff
            assert f'{cells[0]} {diff}'.replace('**', '') in \
                doc.replace('**', '').replace('\n', ' '), (cells[0], diff)


def campaign_report():
    """The rows (``{label: (stem, stage)}``) and pairs of the CamVid Lite0
    campaign's report, read from tools/analysis/camvid_lite0_campaign.sh
    (their one home)."""
    import shlex
    text = open(
        osp.join(REPO, 'tools', 'analysis',
                 'camvid_lite0_campaign.sh')).read()
    stem = re.search(r'^S=(\S+)$', text, re.M).group(1)
    block = re.search(r'^REPORT=\((.*?)\)\n', text, re.M | re.S).group(1)
    words = shlex.split(block.replace('${S}', stem).replace('$S', stem))
    rows, pairs = {}, []
    i = words.index('--rows') + 1
    while not words[i].startswith('--'):
        label, _, target = words[i].partition('=')
        rows[label] = tuple(target.split('@'))
        i += 1
    while i < len(words):
        if words[i] == '--compare':
            pairs.append((words[i + 1], words[i + 2]))
            i += 3
        else:
            i += 1
    return rows, pairs


def test_camvid_opening_table_is_the_stored_runs():
    """docs/camvid.md opens with every row of the campaign on val and on
    the test split and every pair of its report: the lines of
    ``tools/toy_table.py ... --split val+test`` over every stored seed of
    docs/toy_runs/camvid_lite0_protocol.json (the ceiling's in
    camvid_lite0_ceiling.json), recomputed here; a run stored without the
    doc's table following it fails here."""
    import json

    from mmseg_sign.analysis.toy_markdown import split_summary
    runs = {}
    for name in ('camvid_lite0_protocol.json', 'camvid_lite0_ceiling.json'):
        runs.update(json.load(open(osp.join(REPO, 'docs', 'toy_runs', name))))
    rows, pairs = campaign_report()
    assert rows['SIGN + AST'] == ('sign_lite0_camvid-480x360', 'self_train')
    assert ('SIGN + AST', 'CaGNet + AST') in pairs
    lines = split_summary(runs, rows, pairs, ['own'], list(range(10)))
    doc = open(osp.join(REPO, 'docs', 'camvid.md'), encoding='utf-8').read()
    assert '\n'.join(lines) + '\n' in doc, '\n'.join(lines)


#: the metafile entries of EfficientNet-Lite0 on CamVid → the stored
#: run and stage their Results are the means of
LITE0_SOURCES = {
    'sign_lite0_camvid-480x360': ('sign_lite0_camvid-480x360', 'self_train'),
    'sign_lite0_camvid-480x360_st':
    ('sign_lite0_camvid-480x360_st', 'self_train'),
    'sign_lite0_camvid-480x360_transfer-only':
    ('sign_lite0_camvid-480x360', 'transfer'),
    'spnet_lite0_camvid-480x360': ('spnet_lite0_camvid-480x360', 'end'),
    'zs3net_lite0_camvid-480x360':
    ('zs3net_lite0_camvid-480x360_st', 'transfer'),
    'zs3net_lite0_camvid-480x360_st': ('zs3net_lite0_camvid-480x360_st',
                                       'self_train'),
    'cagnet_lite0_camvid-480x360': ('cagnet_lite0_camvid-480x360_st',
                                    'transfer'),
    'cagnet_lite0_camvid-480x360_st': ('cagnet_lite0_camvid-480x360_st',
                                       'self_train'),
    'zs3net_lite0_camvid-480x360_ast': ('zs3net_lite0_camvid-480x360_ast',
                                        'self_train'),
    'cagnet_lite0_camvid-480x360_ast': ('cagnet_lite0_camvid-480x360_ast',
                                        'self_train'),
    # the ablations (Tables 3-4) after AST
    'sign_lite0_camvid-480x360_no-sim': ('sign_lite0_camvid-480x360_no-sim',
                                         'self_train'),
    'sign_lite0_camvid-480x360_pe-none': ('sign_lite0_camvid-480x360_pe-none',
                                          'self_train'),
    'sign_lite0_camvid-480x360_pe-absolute':
    ('sign_lite0_camvid-480x360_pe-absolute', 'self_train'),
}


def test_camvid_imagenet_metafile_follows_the_stored_runs():
    """The Lite0 CamVid metafile entries get Results once five seeds of
    their run are kept in docs/toy_runs/camvid_lite0_protocol.json (the
    protocol's n): on val, the means over the first five stored seeds (0-4
    for the rows of the protocol; 5-9 for a row first trained on the
    second CPU type), and a second entry on CamVid's test split once five
    seeds are scored on it (the first five of those). The README's model
    zoo quotes each as seen / unseen / harmonic mean ± 95 % CI (the test
    split's after ``test:``). Before, an entry has none (a number from
    fewer seeds is quoted in docs/camvid.md only, with its n)."""
    import json
    readme = open(osp.join(REPO, 'README.md'), encoding='utf-8').read()
    runs = json.load(
        open(osp.join(REPO, 'docs', 'toy_runs', 'camvid_lite0_protocol.json')))
    meta = {}
    for path in (META, osp.join(REPO, 'configs', 'baselines', 'metafile.yml')):
        meta.update(
            {m['Name']: m
             for m in yaml.safe_load(open(path))['Models']})
    assert set(LITE0_SOURCES) <= set(meta)
    stems = {stem for stem, _ in LITE0_SOURCES.values()}
    # (the ceiling's seeds 0-4 and its entry: camvid_lite0_ceiling.json,
    # checked by test_camvid_imagenet_ceiling_is_the_stored_runs)
    assert {key.split('/')[0]
            for key in runs} - {'supervised_lite0_camvid-480x360'} <= stems
    for name, (stem, stage) in LITE0_SOURCES.items():
        seeds = sorted(
            int(k.split('/')[-1]) for k in runs
            if k.startswith(f'{stem}/own/'))
        on_test = [s for s in seeds if 'test' in runs[f'{stem}/own/{s}']]
        results = meta[name].get('Results', [])
        val = [r for r in results if 'test split' not in r['Dataset']]
        test = [r for r in results if 'test split' in r['Dataset']]
        assert len(val) + len(test) == len(results) and len(test) <= 1
        line = [
            row for row in readme.splitlines()
            if f'`{meta[name]["Config"]}` |' in row
        ]
        for entries, first, split in ((val, seeds[:5], lambda r: r),
                                      (test, on_test[:5],
                                       lambda r: r['test'])):
            if len(first) < 5:
                assert not entries, (name, seeds, on_test)
                continue
            (result, ) = entries
            assert result['Dataset'].startswith('CamVid at 480x360'), name
            stored = [split(runs[f'{stem}/own/{s}'])[stage] for s in first]
            assert_means(result['Metrics'], stored, name)
            summary = zoo_summary(stored)
            if entries is test:
                summary = f'test: {summary}'
            assert line and summary in line[0], (name, summary)


def test_camvid_ceiling_on_the_test_split_is_the_stored_runs():
    """docs/camvid.md's ceiling on CamVid's test split: every stored
    supervised Lite0 run that was scored on test (mean ± 95 % CI over
    them), and the same runs on val, column by column."""
    import json

    from mmseg_sign.analysis.stats import mean_ci
    runs = {}
    for name in ('camvid_lite0_protocol.json', 'camvid_lite0_ceiling.json'):
        runs.update(json.load(open(osp.join(REPO, 'docs', 'toy_runs', name))))
    scored = [
        r for k, r in sorted(runs.items())
        if k.startswith('supervised_lite0_camvid-480x360/') and 'test' in r
    ]
    assert scored, 'no ceiling run scored on the test split'
    keys = ['mIoU', 'mIoU_seen', 'mIoU_unseen', 'hIoU'
            ] + [k for k in scored[0]['end'] if k.startswith('IoU.')]
    assert len(keys) == 14
    doc = open(osp.join(REPO, 'docs', 'camvid.md')).read()
    section = doc[doc.index("### The ceiling on CamVid's test split"):]
    same = 'val (the same runs)' if len(scored) > 1 else 'val (the same run)'
    for label, split in (('test', lambda r: r['test']['end']),
                         (same, lambda r: r['end'])):
        cells = [str(mean_ci([split(r)[k] for r in scored])) for k in keys]
        row = f'| {label} | {len(scored)} | ' + ' | '.join(cells) + ' |'
        assert row in section, row
