"""Compare every loss and gradient of every SIGN stage between two settings
(device, dtype, TF32) on one fixed model and batch, every random draw
pinned (mmseg_sign/analysis/parity.py, docs/gpu.md).

    python tools/analysis/parity.py CONFIG [--checkpoint CKPT]
        [--settings cpu:float64 cuda:float32 cuda:float32:tf32]
        [--batch-size 8] [--seed 0] [--per-parameter] [--out FILE.json]
        [--cfg-options ...]

The first setting is the reference; each other one is compared with it:
one row per loss and per module's gradient (the parameter that differs
most named), worst first, as ``max|a - b| / max|ref|``. Float64 against
itself on one device must give 0; float32 against float64 shows how much
of a term is rounding; a term far above its float32 level on another
device names the kernel that computes something else there.
"""
import argparse
import json

from mmengine.config import Config
from mmengine.registry import init_default_scope

from mmseg_sign.analysis.parity import (SETTING_HELP, compare, fixed_batch,
                                        fixed_weights, format_table,
                                        parse_setting, plan_steps, run_setting)
from mmseg_sign.structures import StagePlan
from mmseg_sign.utils.atomic import (atomic_write, check_output_file,
                                     dataset_folders)
from mmseg_sign.utils.cli import CfgOptionsAction, merge_cfg_options


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('config')
    parser.add_argument(
        '--checkpoint',
        help='weights to start from '
        '(default: the config\'s initialisation, --seed)')
    parser.add_argument(
        '--settings',
        nargs='+',
        default=['cpu:float64', 'cpu:float32'],
        help=f'two or more, the first the reference: '
        f'{SETTING_HELP}')
    parser.add_argument('--batch-size', type=int, default=8)
    parser.add_argument(
        '--seed',
        type=int,
        default=0,
        help='initialisation, batch and pinned draws')
    parser.add_argument(
        '--stages',
        nargs='+',
        help='steps to compare '
        '(default: every step of the config\'s plan)')
    parser.add_argument(
        '--per-parameter',
        action='store_true',
        help='a row per parameter, not per module')
    parser.add_argument(
        '--ops',
        action='store_true',
        help='also list every ATen operator of each step, '
        'by kind (mmseg_sign/analysis/op_audit.py)')
    parser.add_argument('--out', help='write the rows as json')
    parser.add_argument('--cfg-options', nargs='+', action=CfgOptionsAction)
    parser.add_argument(
        '--force',
        action='store_true',
        help='replace the output file if it exists')
    args = parser.parse_args(argv)
    if len(args.settings) < 2:
        parser.error('--settings needs two or more (the first is the '
                     'reference).')
    for setting in args.settings:
        try:
            parse_setting(setting)
        except ValueError as err:
            parser.error(str(err))
    if args.batch_size < 1:
        parser.error(f'--batch-size must be >= 1, got {args.batch_size}.')
    if args.out:
        try:
            check_output_file(
                args.out,
                dict(config=args.config, checkpoint=args.checkpoint),
                'parity.json',
                force=True)
        except ValueError as err:
            parser.error(str(err))
    return args


def main(argv=None):
    args = parse_args(argv)
    cfg = Config.fromfile(args.config)
    merge_cfg_options(cfg, args.cfg_options)
    if args.out:  # nor onto what it reads: the training images, the table
        table = cfg.model.get('decode_head', {}).get('class_embeddings')
        try:
            reads = dataset_folders(cfg.train_dataloader.dataset)
            reads['class-embedding table'] = (
                table if isinstance(table, str) else None)
            check_output_file(args.out, reads, 'parity.json', force=args.force)
        except ValueError as err:
            raise SystemExit(f'tools/analysis/parity.py: error: {err}') \
                from None
    init_default_scope(cfg.get('default_scope', 'mmseg'))
    try:
        plan = StagePlan.from_config(cfg)
    except ValueError as err:
        raise SystemExit(f'{args.config}: {err}') from None
    if plan is None:
        raise SystemExit(f'{args.config}: no SIGN stage plan (train_cfg.'
                         'stages); parity compares a SIGN plan.')
    steps = plan_steps(plan.stages)
    if args.stages:
        unknown = set(args.stages) - {s[0] for s in steps}
        if unknown:
            raise SystemExit(f'--stages {sorted(unknown)}: the plan\'s '
                             f'steps are {[s[0] for s in steps]}.')
        steps = [s for s in steps if s[0] in args.stages]
    batch = fixed_batch(cfg, args.batch_size, args.seed)
    weights = fixed_weights(cfg, batch['metainfo'], args.checkpoint, args.seed)
    if args.ops:
        from mmseg_sign.analysis.op_audit import audit_table, step_operators
        print('\n## Operators of one step (forward + backward, CPU)\n')
        print(
            audit_table(step_operators(cfg, weights, batch, steps, args.seed)))
    ref_name, *others = args.settings
    ref = run_setting(cfg, weights, batch, ref_name, steps, args.seed)
    report = {}
    for name in others:
        rows = compare(
            run_setting(cfg, weights, batch, name, steps, args.seed),
            ref,
            by_group=not args.per_parameter)
        report[name] = rows
        print(f'\n## {name} against {ref_name} ({len(steps)} steps: '
              f'{", ".join(s[0] for s in steps)})\n')
        print(format_table(rows, name, ref_name))
    if args.out:
        text = json.dumps(
            dict(
                reference=ref_name,
                steps=[s[0] for s in steps],
                rows={
                    k: [
                        dict(term=t, rel_diff=d, scale=s, worst=w)
                        for t, d, s, w in v
                    ]
                    for k, v in report.items()
                }),
            indent=1)

        def write(tmp):
            with open(tmp, 'w') as f:
                f.write(text)

        atomic_write(args.out, write)


if __name__ == '__main__':
    main()
