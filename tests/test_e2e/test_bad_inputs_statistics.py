"""Bad inputs, statistics: the metric, the tables' statistics and the
calibration sweep refuse bad numbers: each case is what a user does and the
clear error (or correct behaviour) it must get, run by ``test_bad_input``
(shared context and helpers: ``tests/bad_input_utils.py``; every case is
listed in docs/robustness.md)."""
import pytest
from bad_input_utils import (Case, _set, build_metric, build_plan_with,
                             evaluate_with_metric_split, run_case,
                             toy_table_dry_run, toy_table_report)

# every test here starts a tool process or trains a run
pytestmark = pytest.mark.slow

CASES = [
    # ---- silently wrong 5: a split given to the metric alone
    Case(
        'test_evaluator_split_alone',
        'tools/test.py CONFIG CKPT --cfg-options '
        'test_evaluator.unseen_classes=[kite,lamp,river]',
        evaluate_with_metric_split,
        r"test_evaluator \(GZSLIoUMetric\) scores with the unseen classes "
        r"\('kite', 'lamp', 'river'\), the checkpoint .* has "
        r"\('flag', 'hedge', 'river'\).*--allow-split-change"),
    # ---- statistics that refuse bad numbers
    Case(
        'toy_table_nan_metric',
        'toy_table.py --report-only --compare over a results.json whose '
        'run holds hIoU NaN',
        toy_table_report(
            _set('self_train.hIoU', float('nan')), '--compare',
            'sign_toy@self_train', 'sign_toy@transfer'),
        r"results\.json: run 'sign_toy/0/1' has self_train\.hIoU=nan \(an "
        r'IoU metric is a number in \[0, 100\]\).*Remove the run'),
    Case('toy_table_impossible_metric',
         'toy_table.py --report-only over a run with hIoU = -500',
         toy_table_report(_set('transfer.hIoU', -500)),
         r"run 'sign_toy/0/1' has transfer\.hIoU=-500"),
    Case('toy_table_string_metric',
         "toy_table.py --report-only over a run with mIoU_seen '80.1'",
         toy_table_report(_set('train.mIoU_seen', '80.1')),
         r"run 'sign_toy/0/1' has train\.mIoU_seen='80\.1'"),
    Case(
        'toy_table_duplicate_row_label',
        'toy_table.py --report-only --rows A=sign_toy@self_train '
        'A=sign_toy@transfer',
        toy_table_report(None, '--rows', 'A=sign_toy@self_train',
                         'A=sign_toy@transfer'),
        r"--rows: the label 'A' is given twice"),
    Case(
        'toy_table_cfg_options_without_tag',
        'toy_table.py --cfg-options train_cfg.stages.0.iters=10 without '
        '--tag',
        toy_table_report(None, '--cfg-options', 'train_cfg.stages.0.iters=10'),
        r"--cfg-options train_cfg\.stages\.0\.iters=10: the runs then train "
        r"something else than the configs.*give them a --tag NAME"),
    Case(
        'toy_table_val_test_with_a_picture',
        'toy_table.py --report-only --split val+test --picture p.png',
        toy_table_report(None, '--split', 'val+test', '--picture', 'p.png'),
        r'--split val\+test writes the two tables only: draw --plot / '
        r'--picture with --split val or test'),
    Case(
        'toy_table_dry_run_with_report_only',
        'toy_table.py --report-only --dry-run',
        toy_table_report(None, '--dry-run'),
        r'--dry-run lists the runs a command would train: give it the '
        r'command without --report-only / --score-test'),
    Case(
        'toy_table_dry_run_with_out', 'toy_table.py --dry-run --out plan.md',
        toy_table_dry_run('--out', 'plan.md'),
        r'--dry-run writes nothing \(the list is printed\): give it the '
        r'command without --out / --plot / --picture'),
    Case(
        'toy_table_report_fine',
        'toy_table.py --report-only over the stored runs (control)',
        toy_table_report(None),
        r'\| sign_toy@self_train \| 2 \|',
        ok=True),
    # ---- silently wrong 11 / obscure: calibration_sweep and temperature
    Case('calibration_sweep_string', "GZSLIoUMetric(calibration_sweep='05')",
         build_metric(calibration_sweep='05'),
         r"calibration_sweep must be a list of numbers .*got '05' \(a str\)"),
    Case('calibration_sweep_number', 'GZSLIoUMetric(calibration_sweep=0.5)',
         build_metric(calibration_sweep=0.5),
         r'calibration_sweep must be a list of numbers .*\[0\.5\] for one'),
    Case('calibration_sweep_nan',
         "GZSLIoUMetric(calibration_sweep=[0.0, float('nan')])",
         build_metric(calibration_sweep=[0.0, float('nan')]),
         r'calibration_sweep\[1\] is nan; every calibration value'),
    Case('calibration_sweep_words',
         "GZSLIoUMetric(calibration_sweep=['low', 'high'])",
         build_metric(calibration_sweep=['low', 'high']),
         r"calibration_sweep\[0\] is 'low' \(a str\), not a number"),
    Case(
        'calibration_sweep_fine', 'GZSLIoUMetric(calibration_sweep='
        '(0, 0.5, 1)) (control)',
        build_metric(calibration_sweep=(0, .5, 1)),
        '',
        ok=True),
    Case(
        'temperature_string', "self_train stage temperature='abc'",
        build_plan_with(name='self_train', iters=1, temperature='abc'),
        r"stages\[1\] \(self_train\): temperature must be a number > 0, "
        r"got 'abc' \(a str\)"),
    Case('temperature_nan', "self_train stage temperature=float('nan')",
         build_plan_with(name='self_train', iters=1, temperature=float('nan')),
         r'temperature must be a finite number > 0, got nan'),
    Case('top_p_string', "self_train stage top_p='75'",
         build_plan_with(name='self_train', iters=1, mode='ST', top_p='75'),
         r"top_p must be a number > 0, got '75'"),
    Case('transfer_weight_bool', 'transfer stage synth_weight=True',
         build_plan_with(name='transfer', iters=1, synth_weight=True),
         r'synth_weight must be a number >= 0, got True'),
]


@pytest.mark.parametrize('case', CASES, ids=[c.name for c in CASES])
def test_bad_input(bad_input_ctx, case):
    run_case(bad_input_ctx, case)
