"""Bad inputs, plans and run options: the stage plan, its lengths and the run's
seeds, work dir and options: each case is what a user does and the clear
error (or correct behaviour) it must get, run by ``test_bad_input`` (shared
context and helpers: ``tests/bad_input_utils.py``; every case is listed in
docs/robustness.md)."""
import bad_input_utils as act  # the cases' actions
import pytest
from bad_input_utils import Case, run_case

# every test here starts a tool process or trains a run
pytestmark = pytest.mark.slow

CASES = [
    # ---- silently wrong 9: --resume with a plan shorter than the run
    Case(
        'resume_past_the_plan',
        'tools/train.py --resume from iter_2.pth with the plan cut to 1 '
        'iteration',
        act.resume_with('', 'train_cfg.stages.0.iters=1'),
        r'--resume from a checkpoint at iteration 2, but the stage plan '
        r'ends at iteration 1 \(train 1\): there is nothing left to train',
        traceback_ok=True),
    # ---- late or obscure errors made early and clear
    Case(
        'init_seed_beyond_64_bits',
        'tools/train.py --cfg-options default_hooks.sign_random.init_seed='
        '2**70',
        act.train_refused('--work-dir', 'wd_seed70', '--cfg-options',
                          f'default_hooks.sign_random.init_seed={2**70}'),
        r'RandomSourcesHook: init_seed must be None .* or an int in '
        r'\[0, 2\*\*64\), got 1180591620717411303424',
        traceback_ok=True),
    Case(
        'draws_seed_2_64',
        'tools/train.py --cfg-options default_hooks.sign_random.draws_seed='
        '2**64',
        act.train_refused('--work-dir', 'wd_seed64', '--cfg-options',
                          f'default_hooks.sign_random.draws_seed={2**64}'),
        r'draws_seed must be None .* or an int in \[0, 2\*\*64\)',
        traceback_ok=True),
    Case('run_seed_negative', 'tools/train.py --cfg-options '
         'randomness.seed=-1', act.train_with_options('randomness.seed=-1'),
         r'randomness\.seed=-1: a seed is an integer in \[0, 2\*\*32\)'),
    Case(
        'run_seed_2_32', 'tools/train.py --cfg-options '
        'randomness.seed=4294967296',
        act.train_with_options('randomness.seed=4294967296'),
        r'randomness\.seed=4294967296: a seed is an integer in '
        r'\[0, 2\*\*32\)'),
    Case(
        'randomness_none', "a config with randomness = None",
        act.train_with('randomness = None'),
        r'randomness=None: mmengine reads a dict .* randomness=dict\('
        r'seed=None\)'),
    Case('work_dir_empty', "tools/train.py --work-dir ''",
         act.train_refused('--work-dir', ''),
         r"--work-dir '': a work dir is a folder path"),
    Case(
        'work_dir_in_proc', 'tools/train.py --work-dir /proc/x',
        act.train_refused('--work-dir', '/proc/x'),
        r'--work-dir /proc/x: cannot make the folder \(.+\); give a '
        r'writable folder path'),
    Case(
        'negative_stage_index', 'tools/train.py --cfg-options '
        'train_cfg.stages.-1.iters=3',
        act.train_with_options('train_cfg.stages.-1.iters=3'),
        r'--cfg-options train_cfg\.stages\.-1\.iters=\.\.\.: list items '
        r'are named by their position from 0'),
    # ---- a plan that moves the checkpoint into another stage
    Case(
        'resume_into_another_stage',
        'tools/train.py --resume from iter_2.pth (plan train 2) with the '
        'plan train 1 + transfer 4',
        act.resume_with(
            "train_cfg = dict(stages=[dict(name='train', iters=1), "
            "dict(name='transfer', iters=4, block_iters=2)])"),
        r"--resume from a checkpoint at iteration 2, in stage 0 \('train'\) "
        r'of the plan that wrote it \(train 2\); this plan \(train 1 → '
        r"transfer 4\) puts that iteration in 'transfer'.*load_from="
        r'CHECKPOINT in another work dir, without --resume',
        traceback_ok=True),
    Case(
        'resume_with_a_longer_stage',
        'tools/train.py --resume from iter_2.pth (plan train 2) with the '
        'train stage lengthened to 3 (control)',
        lambda ctx, case: ctx.tool(
            'train.py', ctx.config('longer.py', ''), '--work-dir',
            ctx.fresh('wd_longer'), '--resume', '--cfg-options',
            f'load_from={ctx.ckpt}', 'train_cfg.stages.0.iters=3'),
        r"SIGN stage 'train' \(1/1\): iterations 1-3, resumed at 3",
        ok=True),
    # ---- a SIGN model under mmengine's plain loop
    Case(
        'sign_model_under_iter_based_loop',
        "tools/train.py with train_cfg=dict(_delete_=True, "
        "type='IterBasedTrainLoop', max_iters=2) on a SIGN config",
        act.train_with("train_cfg = dict(_delete_=True, "
                       "type='IterBasedTrainLoop', max_iters=2, "
                       "val_interval=100)"),
        r'ZeroShotEncoderDecoder trains in stages .* but the training loop '
        r"is IterBasedTrainLoop, which would run its train stage alone.*"
        r"type='StagePlanTrainLoop'",
        traceback_ok=True),
    # ---- an option the stage's mode does not read
    Case(
        'self_train_option_of_another_mode',
        "tools/train.py --cfg-options on sign_toy_st.py's plan: "
        "mode='ST' with temperature=0.01 (the user guide's sweep on an "
        '_st config)',
        act.train_with("train_cfg = dict(stages=[dict(name='train', iters=1), "
                       "dict(name='transfer', iters=2, block_iters=1), "
                       "dict(name='self_train', iters=1, mode='ST', "
                       "temperature=0.01)])"),
        r"stages\[2\] \(self_train\): mode='ST' does not use temperature "
        r"\(it reads top_p\).*temperature: mode='AST'"),
    # ---- obscure: max_iters given where the plan is the home
    Case(
        'max_iters_on_the_command_line',
        'tools/train.py sign_toy --cfg-options train_cfg.max_iters=10',
        act.train_with_max_iters,
        r'train_cfg\.max_iters=10: the run\'s length is set by the SIGN '
        r'stage plan train_cfg\.stages \(train 2 = 2 iterations\).*'
        r'train_cfg\.stages\.0\.iters=N0'),
    Case(
        'val_interval_zero',
        'tools/train.py sign_toy --cfg-options train_cfg.val_interval=0',
        act.train_with_options('train_cfg.val_interval=0'),
        r'train_cfg\.val_interval=0: validate every N iterations needs a '
        r'positive integer N; to validate only at the stage ends'),
    Case('seed_not_a_number',
         'tools/train.py sign_toy --cfg-options randomness.seed=abc',
         act.train_with_options('randomness.seed=abc'),
         r"randomness\.seed='abc': a seed is an integer"),
    Case(
        'resume_in_an_empty_work_dir',
        'tools/train.py --resume in a work dir that holds no checkpoint '
        '(trains from 0, and says so)',
        act.resume_in_empty_work_dir,
        r'--resume: the work dir .* holds no checkpoint \(no '
        r'last_checkpoint\): nothing to resume, the run starts at '
        r'iteration 0',
        ok=True),
    Case(
        'resume_dangling_last_checkpoint',
        "tools/train.py --resume where last_checkpoint names a missing "
        'file', act.resume_dangling_last_checkpoint,
        r'--resume: .*last_checkpoint names .*iter_9\.pth, which does not '
        r'exist .*load_from=.*iter_2\.pth'),
    Case(
        'make_toy_dataset_without_images',
        'tools/make_toy_dataset.py --num-train 0',
        act.make_toy_with('--num-train', '0'),
        r'--num-train must be at least 1 \(got 0\): a split without '
        r'images can be neither trained nor scored'),
    Case('dist_train_zero_processes', 'bash tools/dist_train.sh sign_toy.py 0',
         act.dist_train_with('0'),
         r"NUM_PROCS must be a positive number of processes .*got '0'"),
    Case(
        'toy_table_on_camvid_without_data_config',
        'tools/toy_table.py configs/sign/sign_camvid.py (toy data by '
        'default)', act.toy_table_on_camvid,
        r'sign_camvid\.py: not trained on the toy data .*--data config'),
    Case(
        'max_iters_in_the_config_file',
        "tools/train.py on a config with train_cfg = dict(max_iters=5)",
        act.train_with_max_iters_in_file,
        r'train_cfg\.max_iters=5: the run\'s length is set by the SIGN '
        r'stage plan .*train_cfg\.stages\.0\.iters=N0'),
    Case(
        'max_iters_in_the_config_file_mmseg_tool',
        "mmseg's own tools/train.py on that config",
        act.mmseg_train_with_max_iters_in_file,
        r'train_cfg\.max_iters=5: the run\'s length is set by the SIGN '
        r'stage plan',
        traceback_ok=True),
    Case(
        'partial_param_scheduler_dict',
        'param_scheduler = dict(segmentor=[...]) without the other '
        "wrappers' lists", act.train_with_partial_scheduler_dict,
        r"param_scheduler has lists for \['segmentor'\] but not for the "
        r"optimizer wrappers \['generator', 'discriminator'"),
    Case(
        'bad_label_in_last_val_file',
        'a value 200 in the last validation label file',
        act.train_with_bad_last_val_label,
        r'LAST\.png: label values \[200\] are neither a class index',
        traceback_ok=True),
    # ---- the plan's form and the command line
    Case(
        'plan_a_list_of_names', 'tools/train.py --cfg-options '
        'train_cfg.stages=[train]',
        act.train_with_options('train_cfg.stages=[train]'),
        r"train_cfg\.stages is a list with one dict per stage.*stages\[0\] "
        r"is 'train', not a dict \(dict\(name='train', iters=N\)\)"),
    Case(
        'plan_a_dict', "a config with train_cfg = dict(stages=dict("
        "_delete_=True, name='train', iters=2))",
        act.train_with("train_cfg = dict(stages=dict(_delete_=True, "
                       "name='train', iters=2))"),
        r"got a dict with keys \['iters', 'name'\].*--cfg-options "
        r'train_cfg\.stages\.0\.iters=8'),
    Case(
        'plan_dict_on_the_command_line',
        "tools/train.py --cfg-options \"train_cfg.stages=dict(name='train',"
        "iters=2)\"",
        act.train_with_options("train_cfg.stages=dict(name='train',iters=2)"),
        r'mmengine reads numbers, strings, None, True / False, lists .* not '
        r'this value\. Set one key at a time \(e\.g\. '
        r'train_cfg\.stages\.0\.iters=8'),
    Case(
        'mode_switch_from_the_command_line',
        'tools/train.py --cfg-options train_cfg.stages.1.mode=classifier on '
        'a plan whose transfer stage sets block_iters',
        act.train_config_with_options(
            "train_cfg = dict(stages=[dict(name='train', iters=2), dict("
            "name='transfer', iters=4, block_iters=2)])",
            'train_cfg.stages.1.mode=classifier'),
        r"mode='classifier' does not use block_iters .*Remove it \(on the "
        r'command line: train_cfg\.stages\.1\.block_iters=None\)'),
    Case(
        'work_dir_cannot_hold_the_lock',
        'tools/train.py --work-dir WD, where WD cannot hold the lock file '
        '(read-only; here a folder of its name)',
        act.train_where_the_lock_cannot_go,
        r'the work dir .* cannot hold the run.s lock file .*\.train\.lock '
        r'\(Is a directory\).*Give a --work-dir this user can write to'),
    Case(
        'toy_table_without_the_data',
        'tools/toy_table.py --data config on two CamVid configs, data not '
        'prepared', act.toy_table_without_its_data,
        r'the data these runs read is missing .*class-embedding table '
        r'data/embeddings/camvid10_cagnet_fasttext_word2vec\.npz \(read by '
        r'sign_lite0_camvid-480x360\.py, cagnet_lite0_camvid-480x360_st\.py'
        r'\)'),
    Case(
        'empty_unseen_set_train_only',
        'unseen_classes=() in every dataset, a train-only plan, the GZSL '
        'metric',
        act.train_without_unseen_classes,
        r"split has no unseen classes, but val_evaluator is GZSLIoUMetric"
        r".*val_evaluator = dict\(type='IoUMetric'\)",
        traceback_ok=True),
]


@pytest.mark.parametrize('case', CASES, ids=[c.name for c in CASES])
def test_bad_input(bad_input_ctx, case):
    run_case(bad_input_ctx, case)
