"""The markdown table of ``tools/toy_ablation.py``'s results (mean ± std
over the seeds of every row measured so far, and the latent probes)."""
import numpy as np

KEYS = ('mIoU_seen', 'mIoU_unseen', 'hIoU')


def fmt(values):
    values = np.array(values)
    return f'{values.mean():.2f} ± {values.std():.2f}'


def write_table(results, out, order, iters, data_seed=0):
    """Write (and print) the table of ``results`` (``{row/seed: value}``,
    the runs' ``results.json``) to ``out``: the rows in ``order``; ``iters``
    is ``(train, transfer, self_train)``."""
    TRAIN, TRANSFER, SELF_TRAIN = iters
    rows = {}
    for key, value in results.items():
        row, _ = key.rsplit('/', 1)
        if row == 'stages':
            for name, stage in [('stages: train only', 'train'),
                                ('stages: + transfer (SIGN)', 'transfer'),
                                ('stages: + ST (ZS3, top 75 %)', 'st'),
                                ('stages: + AST (T = 0.2)', 'ast'),
                                ('PE: relative (RPE, default)', 'transfer'),
                                ('SIM: multi-head self-attention (default)',
                                 'transfer')]:
                rows.setdefault(name, []).append(value[stage])
            for name, m in value.get('st_variants', {}).items():
                rows.setdefault(name, []).append(m)
        else:
            rows.setdefault(row, []).append(value['transfer'])
    stages = [v for k, v in results.items() if k.startswith('stages/')]
    seeds = sorted({k.rsplit('/', 1)[1] for k in results})
    lines = [
        '# Toy benchmark: ablations',
        '',
        f'Made by `python tools/toy_ablation.py --seeds {" ".join(seeds)}` '
        'on a 2-core CPU'
        + (f' ({np.mean([s["seconds"] for s in stages]):.0f} s per full '
           f'SIGN run of {TRAIN + TRANSFER + SELF_TRAIN} iterations)'
           if stages else '') + '. Toy data: '
        f'`make_toy_dataset(val_size=(96, 96), seed={data_seed})` (200 '
        'training '
        'images, 64×64 crops; 50 test images of 96×96, larger than the '
        'crops as in the paper\'s PE study); 7 seen / 3 unseen classes. '
        f'Stages: train {TRAIN}, transfer {TRANSFER}, self-training '
        f'{SELF_TRAIN} iterations. Recipe, released, PE and SIM rows are '
        'measured after the transfer stage; the self-training variants '
        'start from the AST run\'s checkpoint when self-training starts. '
        'mIoU in %, mean ± std over the seeds.',
        '',
        '| setting | seen mIoU | unseen mIoU | harmonic mIoU |',
        '|---|---|---|---|',
    ]
    for row in order:
        if row in rows:
            lines.append(f'| {row} | ' + ' | '.join(
                fmt([m[k] for m in rows[row]]) for k in KEYS) + ' |')
    probes = [(name, prefix, [v['probe'] for k, v in results.items()
                              if k.startswith(prefix) and 'probe' in v])
              for name, prefix in [('SIGN (default)', 'stages/'),
                                   ('latent path as before',
                                    'recipe: latent')]]
    probes = [p for p in probes if p[2]]
    if probes:
        lines += [
            '', '## Is the latent code informative?', '',
            'After the `train` stage (`tools/analysis/latent_probe.py`): '
            'logistic-regression probes of `mu` and of a sampled '
            '`z = mu + ε·σ` (what G is fed) on the pixel class, fitted on '
            'the feature-map pixels of half the test images, accuracy on '
            'the other half (chance: the most frequent class); mean |mu| '
            'next to mean σ; the KL term (`loss_kld`, α = 100 included) '
            'logged at the end of the stage.', '',
            '| model | probe on mu | probe on z | chance | mean abs(mu) | '
            'mean σ | final loss_kld |', '|---|---|---|---|---|---|---|']
        for name, prefix, ps in probes:
            klds = [v['kld'][max(v['kld'], key=int)] for k, v in
                    results.items() if k.startswith(prefix) and v.get('kld')]
            lines.append(
                f'| {name} | '
                f'{fmt([100 * p["mu_probe_accuracy"] for p in ps])} % | '
                f'{fmt([100 * p["z_probe_accuracy"] for p in ps])} % | '
                f'{fmt([100 * p["chance"] for p in ps])} % | '
                f'{np.mean([p["mu_abs_mean"] for p in ps]):.2g} | '
                f'{np.mean([p["sigma_mean"] for p in ps]):.3g} | '
                + (f'{np.mean(klds):.2g}' if klds else '–') + ' |')
    with open(out, 'w') as f:
        f.write('\n'.join(lines) + '\n')
    print('\n'.join(lines))
