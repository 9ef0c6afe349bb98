"""Shipped configs on the built-in toy data, over training seeds and toy
data seeds, as markdown tables (docs/toy_results.md).

    python tools/toy_table.py configs/baselines/cagnet_toy_st.py \\
        configs/sign/sign_toy.py [--seeds 0-9] [--data-seeds 0] --jobs 2 \\
        [--rows 'SIGN + AST=sign_toy@self_train' ...] [--metric mIoU_seen] \\
        [--compare 'SIGN + AST' 'CaGNet + ST'] [--seed-key KEY --tag NAME] \\
        [--amp-dtype bfloat16] [--cfg-options KEY=VALUE ... [--tag NAME]] \\
        [--sweep KEY=V1,V2,... [--plot PNG]] [--picture PNG] \\
        [--checkpoint-interval N] [--work-dir work_dirs/toy_table] \\
        [--out table.md]

Each config runs once per (data seed, training seed) with tools/train.py
on ``make_toy_dataset(val_size=(96, 96), seed=DATA_SEED)`` (50 test images
of 96×96, larger than the 64×64 training crops, as in the paper's PE
study). Each run's metrics go to ``WORK_DIR/results.json`` as it ends
(under a lock: tables sharing a work dir keep each other's runs), and
first beside the run (``toy_table_run.json``: a run whose result could not
be stored is stored by the next command, not retrained); runs already
there are skipped, so a command can be repeated or extended (remove a
run's folder and its entry to train it again). A run left unfinished (a
killed command, a machine gone) continues from its last checkpoint
(``--resume``) when the config it dumped is the one it would run now (its
result then says ``resumed_from`` and its ``seconds`` are the last
attempt's); otherwise it trains again from scratch. A run whose first
stages another run of the table ran alike (the same config, options, data
and seed up to their end: SIGN + ST and SIGN + AST share train and
transfer) starts from that run's
checkpoint at their end (``started_from``; the shared stages' results are
the other run's, exactly what training them again gives); ``s per run``
averages the runs trained whole. ``--checkpoint-interval
N`` keeps a checkpoint every N iterations (long runs: a killed one loses
less); like the data root and the seed it is not part of a run's key. A run
is known by what it ran (``key``: a hash of the resolved config with its
``--cfg-options``): a stored run under a name this command uses that ran
something else (a config of the same file name, other options) is an
error before anything trains, as are ``--cfg-options`` without ``--tag``
(or ``--sweep``), a ``--sweep`` key the configs lack, a repeated sweep
value, a ``--rows`` entry naming an unknown run or stage and a row label
given twice; a stored metric that is not a number in [0, 100] (NaN, a
string) is an error naming the run.

* Protocol (docs/toy_results.md): on the toy, training seeds 0-9 on toy
  data seed 0 by default (``--seeds`` / ``--data-seeds`` take ranges:
  ``0-9``, ``0-2,7``); on ``--data config``, seeds 0-4.
* Rows: a config after one of its stages (the validation at the stage's
  end; without a stage plan, its last validation), named ``STEM@STAGE`` or
  by ``--rows LABEL=STEM@STAGE`` (which also orders them); mean ± the
  half-width of its 95 % confidence interval (Student's t) over the n
  runs, and the sd of the harmonic mIoU. With several data seeds a second
  table gives ``--metric`` (harmonic mIoU by default) per data seed.
* ``--compare A B`` (repeatable; row labels): the paired difference A − B
  over the (data seed, seed) runs both rows have, mean ± 95 % CI, how many
  pairs A won, and whether the toy can order the two (the interval
  excludes 0) or not.
* ``--seed-key KEY`` (with ``--tag``): each run's seed goes to ``KEY``
  instead of ``randomness.seed``, e.g.
  ``default_hooks.sign_random.init_seed`` with ``--cfg-options
  randomness.seed=0`` varies the initial weights alone (the spread
  decomposition of docs/toy_results.md).
* ``--amp-dtype DTYPE`` (tools/train.py's) names the runs ``STEM+DTYPE``;
  ``--cfg-options`` go to every run and need ``--tag NAME``, which names
  such runs ``STEM+NAME`` so that they do not pass for the config's own.
* ``--sweep KEY=V1,V2,...`` runs each config at each value (tags
  ``LEAFV``, e.g. ``temperature2``; the config's own value too, so that a
  curve's points are trained together), a row per value after the last
  stage; ``--plot PNG`` draws seen / unseen / harmonic mIoU against the
  value (mean ± std; a dotted line at the config's value), e.g.
  ``--sweep train_cfg.stages.2.temperature=0.05,0.2,2,20``.
* ``--picture PNG``: each config's final predictions next to the ground
  truth (first data seed and training seed).
* ``--report-only``: no training; each row over the stored runs it has
  (the ``runs`` column says how many).
* ``--data config``: the configs' own data and class embeddings instead
  of the toy data (no data seeds), e.g. the CamVid table of docs/camvid.md.
* ``--jobs N`` trains N runs at once, each with ``OMP_NUM_THREADS`` =
  cores / N (unless set): on 2 cores two one-thread runs finish in about
  the time of one two-thread run (24 s vs 23 s for a 200-iteration toy
  run), so the table takes half as long.
"""
import argparse
import os
import os.path as osp
import re
from pathlib import Path

from mmengine.config import Config

from mmseg_sign.analysis.run_records import other_cpu_types
from mmseg_sign.analysis.stats import parse_seeds
from mmseg_sign.analysis.toy_configs import (config_value, missing_data,
                                             row_stem, stage_ends,
                                             sweep_points)
from mmseg_sign.analysis.toy_data import check_toy_data
from mmseg_sign.analysis.toy_markdown import (KEYS, comparison, on_test_split,
                                              split_summary, table,
                                              table_by_data_seed)
from mmseg_sign.analysis.toy_report import draw_comparison, plot_sweep
from mmseg_sign.analysis.toy_results import adopt_finished_runs, read_results
from mmseg_sign.analysis.toy_table import (OWN_DATA, TOY_VAL_SIZE,
                                           foreign_runs, planned_starts,
                                           run_dir_name, score_stored_runs,
                                           train_runs)
from mmseg_sign.utils.atomic import (atomic_write, check_output_dir,
                                     check_output_exists, check_output_file)


def report_lines(results, rows, args):
    """The table of ``rows`` on one split, per data seed and the pairs."""
    lines = table(results, rows, args.data_seeds, args.seeds)
    if len(args.data_seeds) > 1:
        lines += [
            '', f'{args.metric} per toy data seed (mean ± 95 % CI over '
            'the training seeds):', '', *table_by_data_seed(
                results, rows, args.data_seeds, args.seeds, args.metric)
        ]
    if args.compare:
        lines += [
            '', 'Paired differences (the same data seeds and training '
            'seeds; 95 % CI, Student\'s t):', '', *comparison(
                results, rows, args.compare, args.data_seeds, args.seeds,
                'the runs say' if args.data == 'config' else 'the toy says')
        ]
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('configs', nargs='+')
    parser.add_argument(
        '--seeds',
        nargs='+',
        default=None,
        metavar='SEEDS',
        help='training seeds or ranges, e.g. 0-9 (default: 0-9 on the toy, '
        '0-4 with --data config)')
    parser.add_argument(
        '--data-seeds',
        nargs='+',
        default=None,
        metavar='SEEDS',
        help='toy data seeds (default 0)')
    parser.add_argument(
        '--compare',
        nargs=2,
        action='append',
        default=[],
        metavar=('A', 'B'),
        help='paired difference of rows A and B '
        '(labels; repeatable)')
    parser.add_argument(
        '--seed-key',
        default='randomness.seed',
        metavar='KEY',
        help="the config key each run's seed sets (default randomness.seed;"
        ' another needs --tag)')
    parser.add_argument(
        '--data',
        choices=['toy', 'config'],
        default='toy',
        help="toy: the built-in toy data of each --data-seeds (default); "
        "config: the configs' own data and class embeddings (e.g. "
        'CamVid, docs/camvid.md)')
    parser.add_argument(
        '--rows',
        nargs='+',
        default=None,
        help='LABEL=STEM@STAGE, in table order')
    parser.add_argument(
        '--amp-dtype',
        choices=['float16', 'bfloat16'],
        help="tools/train.py's --amp-dtype")
    parser.add_argument(
        '--cfg-options',
        nargs='+',
        default=[],
        metavar='KEY=VALUE',
        help='for every run')
    parser.add_argument(
        '--tag',
        default=None,
        help='runs are named STEM+TAG (with --cfg-options)')
    parser.add_argument(
        '--sweep',
        default=None,
        metavar='KEY=V1,V2,...',
        help='each config at each value of KEY')
    parser.add_argument(
        '--plot',
        default=None,
        metavar='PNG',
        help='with --sweep: mIoU against the value')
    parser.add_argument(
        '--jobs', type=int, default=1, help='runs trained at once')
    parser.add_argument(
        '--checkpoint-interval',
        type=int,
        default=None,
        metavar='N',
        help="a checkpoint every N iterations instead of the config's: a "
        'killed run continues from there (not part of a run\'s key)')
    parser.add_argument(
        '--report-only',
        action='store_true',
        help='train nothing: the table of the stored runs (each row over '
        'the runs it has, e.g. baselines over 1 seed, SIGN over 3)')
    parser.add_argument(
        '--dry-run',
        action='store_true',
        help='train nothing and write nothing: list the runs this command '
        'would train, in the order it starts them, and where each starts '
        '(from scratch, its own unfinished attempt, or the checkpoint of a '
        'run whose first stages it runs alike); a campaign over several '
        'sessions: what is left')
    parser.add_argument(
        '--metric',
        default='hIoU',
        choices=KEYS,
        help='of the per-data-seed table')
    parser.add_argument(
        '--split',
        choices=['val', 'test', 'val+test'],
        default='val',
        help="the table's metrics: the validation split's, logged at each "
        "stage end (default), or the config's test_split (CamVid's test "
        'photographs), scored on the stage-end checkpoints after training; '
        'val+test: one table of both (unseen and harmonic mIoU) and the '
        "--compare pairs' harmonic differences on each")
    parser.add_argument(
        '--score-test',
        action='store_true',
        help='score the stored runs that have no test metrics yet on their '
        "config's test_split, from the stage-end checkpoints in their run "
        'folders (runs trained from now on are scored as they end)')
    parser.add_argument('--work-dir', default='work_dirs/toy_table')
    parser.add_argument('--out', default=None, help='also write the table')
    parser.add_argument(
        '--picture',
        default=None,
        metavar='PNG',
        help="each config's final predictions on the first "
        'test images (first data seed and seed)')
    parser.add_argument(
        '--force',
        action='store_true',
        help='replace the output file if it exists')
    args = parser.parse_args()
    try:
        for name in ('seeds', 'data_seeds'):
            if getattr(args, name) is not None:
                setattr(args, name, [
                    s for item in getattr(args, name)
                    for s in parse_seeds(item)
                ])
    except ValueError as err:
        parser.error(str(err))
    if args.seeds is None:
        args.seeds = list(range(10 if args.data == 'toy' else 5))
    if args.checkpoint_interval is not None and args.checkpoint_interval < 1:
        parser.error(f'--checkpoint-interval {args.checkpoint_interval}: '
                     'give a number of iterations >= 1.')
    if args.seed_key != 'randomness.seed' and not args.tag:
        parser.error(f'--seed-key {args.seed_key}: give the runs a --tag '
                     "(they are not the config's own runs).")
    if args.data == 'config':
        if args.data_seeds is not None:
            parser.error('--data-seeds is for the toy data; with --data '
                         "config the runs use the configs' own data.")
        args.data_seeds = [OWN_DATA]
    elif args.data_seeds is None:
        args.data_seeds = [0]
    if args.jobs < 1:
        parser.error(f'--jobs must be >= 1, got {args.jobs}.')
    for what, values in (('--seeds', args.seeds), ('--data-seeds',
                                                   args.data_seeds),
                         ('configs', [osp.realpath(c) for c in args.configs])):
        twice = sorted({str(v) for v in values if values.count(v) > 1})
        if twice:  # the same run twice (two jobs would train it at once)
            parser.error(f'{what} names {", ".join(twice)} more than once.')
    bad = [s for s in args.seeds + args.data_seeds if s != OWN_DATA and s < 0]
    if bad:
        parser.error(f'--seeds / --data-seeds must be >= 0, got {bad}.')
    if args.tag is not None and not re.fullmatch(r'[A-Za-z0-9._-]+', args.tag):
        parser.error(f'--tag {args.tag!r}: it names run folders, so '
                     'letters, digits, ".", "_" and "-" only.')
    if args.sweep and args.tag or args.plot and not args.sweep:
        parser.error('--sweep names its runs (no --tag); --plot needs it')
    if args.split == 'val+test' and (args.plot or args.picture):
        parser.error('--split val+test writes the two tables only: draw '
                     '--plot / --picture with --split val or test')
    if args.dry_run and (args.report_only or args.score_test):
        parser.error('--dry-run lists the runs a command would train: give '
                     'it the command without --report-only / --score-test')
    if args.dry_run and (args.out or args.plot or args.picture):
        parser.error('--dry-run writes nothing (the list is printed): give '
                     'it the command without --out / --plot / --picture')
    if args.cfg_options and not (args.tag or args.sweep):
        parser.error(
            f'--cfg-options {" ".join(args.cfg_options)}: the runs then '
            "train something else than the configs, and would be stored "
            "under the configs' own names; give them a --tag NAME (e.g. "
            '--tag short).')
    key = (args.sweep or '').partition('=')[0]
    leaf = key.rsplit('.', 1)[-1]
    stem_of = lambda c, tag=args.tag: row_stem(  # noqa: E731
        c, args.amp_dtype, tag)
    # (config, value, tag, its --cfg-options): one per config, or per
    # config and swept value
    try:
        points = sweep_points(args.sweep) if args.sweep else [(None, args.tag,
                                                               [])]
    except ValueError as e:
        parser.error(str(e))
    variants = [(c, *point) for c in args.configs for point in points]
    if args.data == 'toy':  # the toy data replaces each config's data root
        other = [
            c for c in args.configs if config_value(
                c, 'train_dataloader.dataset.type') != 'ZeroShotToyDataset'
        ]
        if other:
            parser.error(
                f'{", ".join(other)}: not trained on the toy data (its '
                'training set is not a ZeroShotToyDataset), so the toy data '
                'cannot replace its data root; train it on its own data '
                'with --data config.')
    wd = osp.abspath(args.work_dir)
    path = osp.join(wd, 'results.json')
    run_names = [
        run_dir_name(stem_of(c, t), d, s) for c, _, t, _ in variants
        for d in args.data_seeds for s in args.seeds
    ]
    for out, example in ((args.out, 'table.md'), (args.plot, 'curve.png'),
                         (args.picture, 'predictions.png')):
        if out:  # never onto what the command reads or keeps
            try:
                check_output_file(
                    out, {
                        **{f'config {c}': c
                           for c in args.configs}, 'results file': path
                    },
                    example,
                    force=True)  # existence last, after the folders
                # nor into the folders the runs read or create: the toy
                # data they train on and the runs' own folders
                check_output_dir(
                    out, {
                        **{
                            f'toy data folder of data seed {d}': osp.join(
                                wd, f'data{d}')
                            for d in args.data_seeds if d != OWN_DATA
                        },
                        **{
                            f'run folder {name}': osp.join(wd, name)
                            for name in run_names
                        }
                    }, example)
                check_output_exists(out, example, args.force)
            except ValueError as err:
                parser.error(str(err))
    if not args.report_only:  # a data{SEED}/ made before: of that seed
        for d in args.data_seeds:
            data_root = osp.join(wd, f'data{d}')
            if d != OWN_DATA and osp.exists(
                    osp.join(data_root, 'class_embeddings.npz')):
                try:
                    check_toy_data(data_root, d, TOY_VAL_SIZE)
                except ValueError as err:
                    parser.error(str(err))
    if not args.dry_run:
        os.makedirs(wd, exist_ok=True)
    try:
        results = read_results(path)
        # (a dry run names them: planned_starts)
        adopted = [] if args.dry_run else adopt_finished_runs(wd, results)
    except (OSError, ValueError) as err:
        parser.error(str(err))
    if adopted:  # trained before, but the results file was not written
        print(
            f'stored the finished runs {adopted} (their results were '
            f'kept beside them) in {path}',
            flush=True)
    # checked before anything trains: what the command names exists, and
    # no stored run under a name it uses ran something else
    if args.sweep:
        missing = [c for c in args.configs if config_value(c, key) is None]
        if missing:
            parser.error(f'--sweep {key}: no such key in {missing} (a '
                         'misspelled key would train identical points).')
    runs = [(c, tag, [*args.cfg_options, *options], d, s)
            for d in args.data_seeds for s in args.seeds
            for c, _, tag, options in variants]
    if args.data == 'config' and not args.report_only:
        # every run reads its config's data: checked once, before any
        # starts (a run without it would fail in its own process)
        missing = {}
        for c, _, tag, options in variants:
            for m in missing_data(c, [*args.cfg_options, *options]):
                missing.setdefault(m, []).append(osp.basename(c))
        if missing:
            parser.error('the data these runs read is missing (prepare it '
                         'as the config says, or point the config at it): ' +
                         '; '.join(f'{m} (read by {", ".join(cs)})'
                                   for m, cs in sorted(missing.items())))
    foreign = foreign_runs(results, runs, args.amp_dtype, args.seed_key)
    if foreign:
        parser.error(
            f'{path} holds runs under the names this command uses that ran '
            'another config or other --cfg-options: ' + ', '.join(foreign) +
            '. Give these runs a --tag, or use another --work-dir.')
    if args.rows:
        stages = {
            stem_of(c, tag): list(stage_ends(c))
            for c, _, tag, _ in variants
        }
        rows = {}
        for spec in args.rows:
            label, _, target = spec.rpartition('=')
            stem, _, stage = target.partition('@')
            known = stages.get(stem) or next(  # or a run stored before
                (sorted(set(r) & {'train', 'transfer', 'self_train', 'end'})
                 for n, r in results.items() if n.split('/')[0] == stem), None)
            if known is None or stage not in known:
                parser.error(f'--rows {spec!r}: ' +
                             (f'no run named {stem!r} (this command trains '
                              f'{sorted(stages)})' if known is None else
                              f'{stem} has no stage {stage!r} (its stages: '
                              f'{known})') + '.')
            if (label or target) in rows:
                parser.error(f'--rows: the label {label or target!r} is '
                             'given twice (a table row each); name them '
                             'apart.')
            rows[label or target] = (stem, stage)
    elif args.sweep:  # the last stage at each value
        rows = {
            f'{stem_of(c)}@{list(stage_ends(c))[-1]} {leaf}={value:g}':
            (stem_of(c, tag), list(stage_ends(c))[-1])
            for c, value, tag, _ in variants
        }
    else:
        rows = {
            f'{stem_of(c)}@{s}': (stem_of(c), s)
            for c in args.configs for s in stage_ends(c)
        }
    for pair in args.compare:
        unknown = [label for label in pair if label not in rows]
        if unknown:
            parser.error(f'--compare {" ".join(map(repr, pair))}: no row '
                         f'{unknown[0]!r}; the rows are {list(rows)} (name '
                         "them with --rows LABEL=STEM@STAGE).")
    todo = [
        r for r in runs
        if f'{stem_of(r[0], r[1])}/{r[3]}/{r[4]}' not in results
    ]
    if args.report_only:
        if runs and len(todo) == len(runs):
            parser.error(
                f'--report-only: {wd} holds no stored run of these configs '
                'and seeds (nothing to report); run the same command '
                'without --report-only to train them.')
        todo = []
    for line in other_cpu_types(todo, results):
        print(f'warning: {line}', flush=True)
    if args.dry_run:
        print(f'{len(todo)} of {len(runs)} runs to train ({args.jobs} at a '
              f'time, in this order; {len(runs) - len(todo)} stored in '
              f'{path}):')
        for line in planned_starts(todo, wd, args.amp_dtype, args.seed_key,
                                   args.checkpoint_interval):
            print(f'  {line}')
        return
    failed = train_runs(todo, wd, results, args.amp_dtype, args.jobs,
                        args.seed_key, args.checkpoint_interval)
    if failed:  # the other runs are kept: a repeated command skips them
        raise SystemExit('\n'.join(['runs failed:', *failed]))
    if args.score_test:
        rescored = score_stored_runs(runs, wd, results, args.amp_dtype)
        print(f'scored on the test split: {rescored or "no run"}')
    if args.split == 'val+test':  # --picture and --plot refused above
        lines = split_summary(results, rows, args.compare, args.data_seeds,
                              args.seeds)
    else:
        if args.split == 'test':  # each run's test metrics in place of val's
            results = on_test_split(results)
        lines = report_lines(results, rows, args)
    if args.picture:
        labels = {target: label for label, target in rows.items()}
        models = []
        for cfg_path in args.configs:
            stem = stem_of(cfg_path)
            last = list(stage_ends(cfg_path))[-1]
            run_dir = osp.join(
                wd, run_dir_name(stem, args.data_seeds[0], args.seeds[0]))
            cfg = Config.fromfile(osp.join(run_dir, osp.basename(cfg_path)))
            with open(osp.join(run_dir, 'last_checkpoint')) as f:
                models.append((labels.get((stem, last),
                                          stem), cfg, f.read().strip()))
        draw_comparison(models, models[0][1], args.picture)
    if args.plot:
        wanted = {f'{d}/{s}' for d in args.data_seeds for s in args.seeds}
        curves = {}
        for c, value, tag, _ in variants:
            stage = list(stage_ends(c))[-1]
            runs = [
                r for k, r in results.items()
                if k.split('/', 1) in ([stem_of(c, tag), w] for w in wanted)
            ]
            for metric, name in zip(KEYS, ('seen', 'unseen', 'harmonic')):
                label = f'{name} mIoU' + (f' ({stem_of(c)})'
                                          if len(args.configs) > 1 else '')
                curves.setdefault(
                    label, {})[value] = [r[stage][metric] for r in runs]
        own = config_value(args.configs[0], key)
        plot_sweep(
            curves,
            leaf,
            args.plot,
            marks=[(own, f'config: {own}')] if own else ())
    print('\n'.join(lines))
    if args.out:
        text = '\n'.join(lines) + '\n'
        atomic_write(args.out, lambda tmp: Path(tmp).write_text(text))


if __name__ == '__main__':
    main()
