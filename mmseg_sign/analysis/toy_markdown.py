"""The toy tables' markdown: each row's mean ± 95 % confidence interval
over its n runs, and paired comparisons of two rows
(``tools/toy_table.py``, docs/toy_results.md)."""
import numpy as np

from .stats import mean_ci, paired_difference

#: the metrics of a row, in table order
KEYS = ('mIoU_seen', 'mIoU_unseen', 'hIoU')


def fmt(values) -> str:
    """``mean ± half-width of its 95 % CI`` (Student's t, n − 1 degrees of
    freedom) with two decimals; one value alone.

    Args:
        values (Sequence[float]): the runs' values.

    Returns:
        str: e.g. ``'50.00 ± 10.00'``.
    """
    return str(mean_ci(values))


def table(results: dict, rows: dict, data_seeds, seeds) -> list:
    """Markdown lines: each row's mean ± 95 % CI over its runs of the given
    data seeds and training seeds (``n``: how many), the sd of its
    harmonic mIoU over those runs, and the runs' mean bootstrap sd of it
    over the test images (``GZSLIoUMetric(bootstrap=B)``, where logged).

    Args:
        results (dict): ``{STEM/DATA_SEED/SEED: run}`` (:func:`run`'s).
        rows (dict): ``{label: (stem, stage)}`` in table order.
        data_seeds (Sequence[int]): the data seeds to average over.
        seeds (Sequence[int]): the training seeds to average over.

    Returns:
        list[str]: the header and one line per row that has runs.
    """
    wanted = {f'{d}/{s}' for d in data_seeds for s in seeds}
    lines = [
        '| row | n | seen mIoU | unseen mIoU | harmonic mIoU | '
        'sd (harmonic) | sd (test images) | SIM params | model params '
        '| s per run |', '|---|---|---|---|---|---|---|---|---|---|'
    ]
    for label, (stem, stage) in rows.items():
        runs = [
            v for k, v in results.items() if k.split('/')[0] == stem
            and k.split('/', 1)[1] in wanted and stage in v
        ]
        if runs:
            lines.append(f'| {label} | {len(runs)} | ' + ' | '.join(
                fmt([r[stage][k] for r in runs]) for k in KEYS) +
                         f" | {_sd([r[stage]['hIoU'] for r in runs])}" +
                         f" | {_boot([r[stage] for r in runs])}" +
                         f" | {runs[0]['params']['sim']:,} | "
                         f"{runs[0]['params']['model']:,} | "
                         f"{_seconds(runs)} |")
    return lines


def _seconds(runs) -> str:
    """Mean seconds of the runs trained whole in one attempt (a run that
    continued its own checkpoint or started from another run's stages
    timed only its last part); '—' when there is none."""
    whole = [
        r['seconds'] for r in runs
        if not {'resumed_from', 'started_from'} & set(r)
    ]
    return f'{np.mean(whole):.0f}' if whole else '—'


def table_by_data_seed(results: dict,
                       rows: dict,
                       data_seeds,
                       seeds,
                       metric: str = 'hIoU') -> list:
    """Markdown lines: one metric per row and toy data seed (mean ± 95 % CI
    over the training seeds), to see whether an ordering holds on each.

    Args:
        results (dict): ``{STEM/DATA_SEED/SEED: run}`` (:func:`run`'s).
        rows (dict): ``{label: (stem, stage)}`` in table order.
        data_seeds (Sequence[int]): the columns.
        seeds (Sequence[int]): the training seeds to average over.
        metric (str): one of :data:`KEYS`.

    Returns:
        list[str]: the header and one line per row that has runs.
    """
    lines = [
        '| row | ' + ' | '.join(f'data seed {d}' for d in data_seeds) + ' |',
        '|---|' + '---|' * len(data_seeds)
    ]
    for label, (stem, stage) in rows.items():
        cells = []
        for d in data_seeds:
            values = [
                results[k][stage][metric]
                for k in (f'{stem}/{d}/{s}' for s in seeds)
                if k in results and stage in results[k]
            ]
            cells.append(fmt(values) if values else '–')
        if any(c != '–' for c in cells):
            lines.append(f'| {label} | ' + ' | '.join(cells) + ' |')
    return lines


def _sd(values) -> str:
    return f'{np.std(values, ddof=1):.2f}' if len(values) > 1 else '–'


def _boot(stages) -> str:
    """The runs' mean bootstrap sd of the harmonic mIoU (how much one
    run's score owes to which test images were scored), where logged."""
    sds = [s['hIoU_boot_sd'] for s in stages if 'hIoU_boot_sd' in s]
    return f'{np.mean(sds):.2f}' if sds else '–'


def paired_values(results: dict,
                  row_a: tuple,
                  row_b: tuple,
                  data_seeds,
                  seeds,
                  metric: str = 'hIoU') -> tuple:
    """The (data seed, seed) pairs both rows ran, and their values.

    Two runs whose records name the CPU types they trained on (``cpu``,
    tools/toy_table.py) pair only where those are the same: float kernels
    differ between CPU types, so a seed's runs on two types are not its
    paired runs. A run without the record (trained before it was kept)
    pairs as before.

    Args:
        results (dict): ``{STEM/DATA_SEED/SEED: run}``.
        row_a (tuple): ``(stem, stage)`` of A.
        row_b (tuple): ``(stem, stage)`` of B.
        data_seeds (Sequence[int]): the data seeds to pair over.
        seeds (Sequence[int]): the training seeds to pair over.
        metric (str): one of :data:`KEYS`.

    Returns:
        tuple[list[str], list[float], list[float]]: the pairs
        (``'DATA/SEED'``), A's values and B's.
    """
    pairs, a, b = [], [], []
    for d in data_seeds:
        for s in seeds:
            run_a = results.get(f'{row_a[0]}/{d}/{s}', {})
            run_b = results.get(f'{row_b[0]}/{d}/{s}', {})
            ra, rb = run_a.get(row_a[1]), run_b.get(row_b[1])
            if ra is not None and rb is not None and same_cpu(run_a, run_b):
                pairs.append(f'{d}/{s}')
                a.append(ra[metric])
                b.append(rb[metric])
    return pairs, a, b


def same_cpu(run_a: dict, run_b: dict) -> bool:
    """Whether two runs may pair: their ``cpu`` records agree, or one lacks
    it."""
    return not (run_a.get('cpu') and run_b.get('cpu')) or \
        run_a['cpu'] == run_b['cpu']


def comparison(results: dict,
               rows: dict,
               pairs_of_labels,
               data_seeds,
               seeds,
               says: str = 'the toy says') -> list:
    """Markdown lines: for each ``(A, B)``, the paired difference A − B of
    each metric over the runs both have (mean ± 95 % CI, n, how many pairs
    A won) and what the table can say: ``A > B``, ``A < B`` (the interval
    excludes 0) or ``not resolved``.

    Args:
        results (dict): ``{STEM/DATA_SEED/SEED: run}``.
        rows (dict): ``{label: (stem, stage)}``.
        pairs_of_labels (Sequence[tuple[str, str]]): labels of ``rows``.
        data_seeds (Sequence[int]): the data seeds to pair over.
        seeds (Sequence[int]): the training seeds to pair over.
        says (str): the verdict column's header (``'the runs say'`` for
            runs on a config's own data, e.g. CamVid).

    Returns:
        list[str]: the header and one line per comparison and metric.
    """
    lines = [
        '| A − B | metric | n | difference (95 % CI) | A wins | '
        f'{says} |', '|---|---|---|---|---|---|'
    ]
    names = dict(zip(KEYS, ('seen mIoU', 'unseen mIoU', 'harmonic mIoU')))
    for la, lb in pairs_of_labels:
        for metric in KEYS:
            pairs, a, b = paired_values(results, rows[la], rows[lb],
                                        data_seeds, seeds, metric)
            if not pairs:
                lines.append(f'| {la} − {lb} | {names[metric]} | 0 | – | – '
                             '| no paired runs |')
                continue
            p = paired_difference(a, b)
            verdict = {
                'A > B': f'{la} > {lb}',
                'A < B': f'{la} < {lb}'
            }.get(p.verdict, 'not resolved')
            lines.append(f'| {la} − {lb} | {names[metric]} | {p.diff.n} | '
                         f'{p.diff} | {p.wins}/{p.diff.n} | {verdict} |')
    return lines


def on_test_split(results: dict) -> dict:
    """The runs scored on their config's test split (CamVid's test
    photographs), each with those metrics in place of the validation
    ones: the stage results of ``run['test']`` over the run's own.

    Args:
        results (dict): ``{STEM/DATA_SEED/SEED: run}``.

    Returns:
        dict: the runs that have ``test``, in the same form.
    """
    return {
        name: {
            **{k: v
               for k, v in run.items() if k not in run['test']},
            **run['test']
        }
        for name, run in results.items() if run.get('test')
    }


def split_summary(results: dict, rows: dict, pairs_of_labels, data_seeds,
                  seeds) -> list:
    """Markdown lines: one table of every row on the validation split and
    on the test split side by side (n, unseen and harmonic mIoU, mean ±
    95 % CI), then the paired differences of the harmonic mIoU on each
    split (n, mean ± 95 % CI, how many pairs A won, the verdict). A row's
    or pair's test columns hold the runs scored on the test split
    (:func:`on_test_split`), which may be fewer than its val runs.

    Args:
        results (dict): ``{STEM/DATA_SEED/SEED: run}``.
        rows (dict): ``{label: (stem, stage)}`` in table order.
        pairs_of_labels (Sequence[tuple[str, str]]): labels of ``rows``.
        data_seeds (Sequence[int]): the data seeds to average and pair over.
        seeds (Sequence[int]): the training seeds to average and pair over.

    Returns:
        list[str]: the two tables, a blank line between them.
    """
    splits = (results, on_test_split(results))
    wanted = {f'{d}/{s}' for d in data_seeds for s in seeds}
    lines = [
        '| row | val: n | val: unseen mIoU | val: harmonic mIoU | test: n | '
        'test: unseen mIoU | test: harmonic mIoU |', '|---|---|---|---|---|'
        '---|---|'
    ]
    for label, (stem, stage) in rows.items():
        cells = []
        for runs in splits:
            stages = [
                v[stage] for k, v in runs.items() if k.split('/')[0] == stem
                and k.split('/', 1)[1] in wanted and stage in v
            ]
            cells += [str(len(stages))] + [
                fmt([s[k] for s in stages]) if stages else '–'
                for k in ('mIoU_unseen', 'hIoU')
            ]
        if cells[0] != '0' or cells[3] != '0':
            lines.append(f'| {label} | ' + ' | '.join(cells) + ' |')
    lines += [
        '', '| A − B (harmonic mIoU) | val: n | val: difference (95 % CI) | '
        'val: A wins | test: n | test: difference (95 % CI) | test: A wins '
        '| the runs say (val; test) |', '|---|---|---|---|---|---|---|---|'
    ]
    for la, lb in pairs_of_labels:
        cells, says = [], []
        for runs in splits:
            _, a, b = paired_values(runs, rows[la], rows[lb], data_seeds,
                                    seeds, 'hIoU')
            if not a:
                cells += ['0', '–', '–']
                says.append('–')
                continue
            p = paired_difference(a, b)
            cells += [str(p.diff.n), str(p.diff), f'{p.wins}/{p.diff.n}']
            says.append({
                'A > B': f'{la} > {lb}',
                'A < B': f'{la} < {lb}'
            }.get(p.verdict, 'not resolved'))
        if cells[0] != '0' or cells[3] != '0':
            lines.append(f'| {la} − {lb} | ' + ' | '.join(cells) +
                         f' | {"; ".join(says)} |')
    return lines
