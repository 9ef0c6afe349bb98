"""The toy tables' markdown: each row's mean ± std over its runs
(``tools/toy_table.py``, docs/toy_results.md)."""
import numpy as np

#: the metrics of a row, in table order
KEYS = ('mIoU_seen', 'mIoU_unseen', 'hIoU')


def fmt(values) -> str:
    """``mean ± std`` (numpy's std, ddof 0) with two decimals.

    Args:
        values (Sequence[float]): the runs' values.

    Returns:
        str: e.g. ``'50.00 ± 10.00'``.
    """
    return f'{np.mean(values):.2f} ± {np.std(values):.2f}'


def table(results: dict, rows: dict, data_seeds, seeds) -> list:
    """Markdown lines: each row's mean ± std over its runs of the given
    data seeds and training seeds.

    Args:
        results (dict): ``{STEM/DATA_SEED/SEED: run}`` (:func:`run`'s).
        rows (dict): ``{label: (stem, stage)}`` in table order.
        data_seeds (Sequence[int]): the data seeds to average over.
        seeds (Sequence[int]): the training seeds to average over.

    Returns:
        list[str]: the header and one line per row that has runs.
    """
    wanted = {f'{d}/{s}' for d in data_seeds for s in seeds}
    lines = ['| row | runs | seen mIoU | unseen mIoU | harmonic mIoU | '
             'SIM params | model params | s per run |',
             '|---|---|---|---|---|---|---|---|']
    for label, (stem, stage) in rows.items():
        runs = [v for k, v in results.items() if k.split('/')[0] == stem
                and k.split('/', 1)[1] in wanted and stage in v]
        if runs:
            lines.append(
                f'| {label} | {len(runs)} | ' + ' | '.join(
                    fmt([r[stage][k] for r in runs]) for k in KEYS)
                + f" | {runs[0]['params']['sim']:,} | "
                f"{runs[0]['params']['model']:,} | "
                f"{np.mean([r['seconds'] for r in runs]):.0f} |")
    return lines


def table_by_data_seed(results: dict, rows: dict, data_seeds, seeds,
                       metric: str = 'hIoU') -> list:
    """Markdown lines: one metric per row and toy data seed (mean ± std
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
    lines = ['| row | ' + ' | '.join(f'data seed {d}' for d in data_seeds)
             + ' |', '|---|' + '---|' * len(data_seeds)]
    for label, (stem, stage) in rows.items():
        cells = []
        for d in data_seeds:
            values = [results[k][stage][metric] for k in (
                f'{stem}/{d}/{s}' for s in seeds)
                if k in results and stage in results[k]]
            cells.append(fmt(values) if values else '–')
        if any(c != '–' for c in cells):
            lines.append(f'| {label} | ' + ' | '.join(cells) + ' |')
    return lines
