"""The paper's ablations and the recipe switches on the toy benchmark,
over several seeds.

    python tools/toy_ablation.py --seeds 0 1 2 \
        [--groups stages recipe released pe sim] [--data-seed 0]

Makes a toy dataset whose test images (96×96) are larger than the training
crops (64×64), as the paper tests RPE, then trains with tools/train.py:

* ``stages`` (one run per seed gives all rows): after ``train`` only,
  after ``transfer`` (= SIGN without self-training), + ST, + AST (ST
  resumes the AST run's checkpoint taken when self-training starts, so
  both share the first two stages exactly); also the linear probe of the
  latent code ``mu`` (tools/analysis/latent_probe.py) after ``train``;
  and two self-training variants started from the same checkpoint
  (``load_from``): AST on every ignored pixel (the paper's candidates) and
  the project's update before issue 16 (E, SIM, C; synthetic CE);
* ``released`` (after ``transfer``): each detail of the released code that
  the paper configs adopt (MMD estimator, summed D loss, context gates,
  Adam betas), switched on alone in the toy model;
* ``recipe`` (after ``transfer``): each part of the authors' recipe
  switched back to the earlier behaviour on its own: the latent path
  (``z_modulation=False``), G / D / C / MMD (linear G output, separate
  linear C and MLP D, the kernel widths used as standard deviations) and
  the transfer stage (C alone, real / synthetic weights 1 / 1, 50 %
  unseen labels);
* ``pe``: positional encoding none / absolute / absolute + interpolation /
  relative; ``sim``: SIM architecture conv / attention / self-attention /
  multi-head self-attention (after ``transfer``).

Results are kept per run in ``WORK_DIR/results.json``, so groups can be
run separately; the markdown table (mean ± std over the seeds of seen,
unseen and harmonic mIoU) holds every row measured so far.
"""
import argparse
import json
import os
import os.path as osp
import shutil
import subprocess
import sys
import time

from mmseg_sign.utils.logs import logged_records as logged
from toy_ablation_table import KEYS, fmt, write_table  # noqa: F401 (tools/)

REPO = osp.dirname(osp.dirname(osp.abspath(__file__)))
BASE = osp.join(REPO, 'configs', 'sign', 'sign_toy.py')
TRAIN, TRANSFER, SELF_TRAIN = 600, 200, 200


def write_config(path, data_root, body):
    """``body`` on top of the toy config pointed at ``data_root``. The data
    overrides live in a base of their own, so that a ``model = dict(...)``
    in ``body`` merges with them instead of replacing them."""
    common = osp.join(osp.dirname(path), 'toy_data.py')
    with open(common, 'w') as f:
        f.write(f"""_base_ = [{BASE!r}]
data_root = {data_root!r}
train_dataloader = dict(dataset=dict(data_root=data_root))
val_dataloader = dict(dataset=dict(data_root=data_root))
test_dataloader = val_dataloader
model = dict(decode_head=dict(
    class_embeddings=data_root + '/class_embeddings.npz'))
default_hooks = dict(checkpoint=dict(interval=200))
""")
    with open(path, 'w') as f:
        f.write(f"_base_ = [{common!r}]\n{body}\n")


def stage_body(stages):
    total = sum(s['iters'] for s in stages)
    # SIGNStageHook validates at the end of every stage
    return f"""stages = {stages!r}
custom_hooks = [
    dict(type='SIGNStageHook', stages=stages),
    dict(type='TorchRNGStateHook'),
]
train_cfg = dict(max_iters={total}, val_interval={total})
"""


TRANSFER_STAGE = dict(name='transfer', iters=TRANSFER, mode='alternate',
                      block_iters=25)
FULL = stage_body([
    dict(name='train', iters=TRAIN),
    TRANSFER_STAGE,
    dict(name='self_train', iters=SELF_TRAIN, mode='AST', temperature=0.2,
         candidates='predicted_unseen')
])
ST = stage_body([
    dict(name='train', iters=TRAIN),
    TRANSFER_STAGE,
    dict(name='self_train', iters=SELF_TRAIN, mode='ST', top_p=75.0)
])
TRANSFER_ONLY = stage_body([dict(name='train', iters=TRAIN), TRANSFER_STAGE])
# self-training variants, each started from the AST run's checkpoint at the
# start of self-training (load_from; a plan of self-training alone)
ST_VARIANTS = {
    # the paper's AST candidates: every ignored pixel (void included)
    'stages: + AST, every ignored pixel (the paper)': (
        dict(mode='AST', temperature=0.2), ''),
    # this project's update before issue 16: E, SIM and C on the weighted
    # CE plus C on synthetic features, G and D frozen (T = 0.1, SGD 2e-3
    # then)
    'stages: + AST, update as before (E, SIM, C; synthetic CE)': (
        dict(mode='AST', temperature=0.1, update='classifier',
             synth_weight=1.0),
        "optim_wrapper = dict(self_train=dict(optimizer=dict(lr=2e-3), "
        "modules=['backbone', 'neck', 'decode_head.trunk', "
        "'decode_head.conv_seg']))"),
}


def run(cmd) -> str:
    """Run ``cmd``; its stdout, or a RuntimeError with its stderr."""
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode:
        raise RuntimeError(f'{" ".join(cmd)} failed:\n{proc.stderr[-4000:]}')
    return proc.stdout


def train(cfg, work_dir, seed, resume=False, extra_args=()):
    """tools/train.py ``cfg`` with ``randomness.seed=seed`` (and
    ``extra_args``, e.g. ``['--amp-dtype', 'bfloat16']``); seconds taken."""
    cmd = [sys.executable, osp.join(REPO, 'tools', 'train.py'), cfg,
           '--work-dir', work_dir, *extra_args,
           '--cfg-options', f'randomness.seed={seed}']
    if resume:
        cmd.insert(-2, '--resume')
    t0 = time.time()
    run(cmd)
    return time.time() - t0


def val_metrics(work_dir):
    """{iteration: {key: value}} of every validation in the work dir."""
    return {step: {k: r[k] for k in KEYS}
            for step, r in logged(work_dir, 'hIoU').items()}


RECIPE_VARIANTS = {
    'recipe: latent path as before (F_x independent of z)':
    "model = dict(neck=dict(z_modulation=False))",
    'recipe: G, D, C, MMD as before':
    """model = dict(decode_head=dict(
    generator_out_act=None, classifier='linear',
    mmd_kernel_variances=(1, 4, 25, 100, 400)))  # σ = 1, 2, 5, 10, 20
optim_wrapper = dict(
    segmentor=dict(modules=['backbone', 'neck', 'decode_head.conv_seg']),
    discriminator=dict(modules=['decode_head.discriminator']),
    transfer=dict(modules=['decode_head.conv_seg',
                           'decode_head.discriminator']),
    self_train=dict(modules=['backbone', 'neck', 'decode_head.conv_seg']),
    self_train_discriminator=dict(modules=['decode_head.discriminator']))
""",
    'recipe: transfer as before (C alone, 50 % unseen)':
    # 7 seen, 3 unseen: 3 (1 + r) = 7 gives a 50 % unseen share
    "model = dict(decode_head=dict(gen_unseen_rate=4 / 3))\n"
    "custom_hooks = [dict(type='SIGNStageHook', stages=["
    f"dict(name='train', iters={TRAIN}), dict(name='transfer', "
    f"iters={TRANSFER}, mode='classifier', real_weight=1.0, "
    "synth_weight=1.0)]), dict(type='TorchRNGStateHook')]",
}
# the released code's details (docs/reproduction.md) (adopted in the
# paper configs), each switched on alone in the toy model
RELEASED_VARIANTS = {
    "released: MMD sqrt(½·MMD²) per class (mmd_estimator='released')":
    "model = dict(decode_head=dict(mmd_estimator='released'))",
    "released: D loss real + fake summed (adv_d_reduction='sum')":
    "model = dict(decode_head=dict(adv_d_reduction='sum'))",
    'released: context gates sigmoid(ReLU(conv)), bias-free':
    "model = dict(neck=dict(released_gates=True))",
    'released: Adam betas (0.9, 0.999)':
    "optim_wrapper = dict(" + ", ".join(
        f"{k}=dict(optimizer=dict(betas=(0.9, 0.999)))" for k in (
            'generator', 'discriminator', 'transfer', 'transfer_generator'))
    + ")",
}
PE_VARIANTS = {
    'PE: none': "model = dict(neck=dict(pe_type='none'))",
    'PE: absolute': "model = dict(neck=dict(pe_type='absolute'))",
    'PE: absolute + interpolation':
    "model = dict(neck=dict(pe_type='absolute_interp', train_size=(8, 8)))",
}
SIM_VARIANTS = {
    'SIM: conv': "model = dict(neck=dict(arch='conv'))",
    'SIM: attention': "model = dict(neck=dict(arch='attention'))",
    'SIM: self-attention': "model = dict(neck=dict(arch='self_attention'))",
}
ORDER = [
    'stages: train only', 'stages: + transfer (SIGN)',
    'stages: + ST (ZS3, top 75 %)', 'stages: + AST (T = 0.2)',
    *ST_VARIANTS, *RECIPE_VARIANTS, *RELEASED_VARIANTS, 'PE: none',
    'PE: absolute',
    'PE: absolute + interpolation', 'PE: relative (RPE, default)',
    'SIM: conv', 'SIM: attention', 'SIM: self-attention',
    'SIM: multi-head self-attention (default)'
]


def probe(cfg, checkpoint):
    """Linear-probe accuracy of mu and chance (latent_probe.py)."""
    cmd = [sys.executable, osp.join(REPO, 'tools', 'analysis',
                                    'latent_probe.py'), cfg, checkpoint]
    return json.loads(run(cmd).strip().splitlines()[-1])


def kld_curve(work_dir):
    """{iteration: loss_kld} logged during the run."""
    return {step: r['loss_kld']
            for step, r in logged(work_dir, 'loss_kld').items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--seeds', type=int, nargs='+', default=[0, 1, 2])
    parser.add_argument('--groups', nargs='+',
                        default=['stages', 'recipe', 'pe', 'sim'],
                        choices=['stages', 'recipe', 'released', 'pe',
                                 'sim'])
    parser.add_argument('--data-seed', type=int, default=0,
                        help='seed of the toy data (the table: 0)')
    parser.add_argument('--work-dir', default='work_dirs/toy_ablation')
    parser.add_argument('--out', default='docs/toy_results.md')
    parser.add_argument('--reprobe', action='store_true',
                        help='only redo the latent probes of the runs in '
                        'the work dir and rewrite the table')
    args = parser.parse_args()
    wd = osp.abspath(args.work_dir)
    os.makedirs(wd, exist_ok=True)
    data_root = osp.join(wd, 'data')
    if not osp.exists(osp.join(data_root, 'class_embeddings.npz')):
        sys.path.insert(0, REPO)
        from mmseg_sign.datasets.toy_data import make_toy_dataset
        make_toy_dataset(data_root, val_size=(96, 96), seed=args.data_seed)
    results_path = osp.join(wd, 'results.json')
    results = {}
    if osp.exists(results_path):
        with open(results_path) as f:
            results = json.load(f)

    def save(key, value):
        results[key] = value
        with open(results_path, 'w') as f:
            json.dump(results, f, indent=1)

    if args.reprobe:
        for key, value in results.items():
            row, seed = key.rsplit('/', 1)
            if 'probe' not in value:
                continue
            if row == 'stages':
                run, cfg = f'ast_seed{seed}', 'ast.py'
            else:
                i = list(RECIPE_VARIANTS).index(row)
                run, cfg = f'variant{i}_seed{seed}', f'variant{i}.py'
            value['probe'] = probe(osp.join(wd, cfg),
                                   osp.join(wd, run, f'iter_{TRAIN}.pth'))
            save(key, value)
        write_table(results, args.out, ORDER, (TRAIN, TRANSFER, SELF_TRAIN),
                    args.data_seed)
        return
    cfgs = {}
    for name, body in [('ast', FULL), ('st', ST)]:
        cfgs[name] = osp.join(wd, f'{name}.py')
        write_config(cfgs[name], data_root, body)
    variants = {}
    for group, table in [('recipe', RECIPE_VARIANTS),
                         ('released', RELEASED_VARIANTS), ('pe', PE_VARIANTS),
                         ('sim', SIM_VARIANTS)]:
        if group in args.groups:
            variants.update(table)
    for i, (row, body) in enumerate(variants.items()):
        cfgs[row] = osp.join(wd, f'variant{i}.py')
        write_config(cfgs[row], data_root, TRANSFER_ONLY + body)

    for seed in args.seeds:
        if 'stages' in args.groups:
            run = osp.join(wd, f'ast_seed{seed}')
            seconds = train(cfgs['ast'], run, seed)
            m = val_metrics(run)
            st_run = osp.join(wd, f'st_seed{seed}')
            os.makedirs(st_run, exist_ok=True)
            start = osp.join(st_run, f'iter_{TRAIN + TRANSFER}.pth')
            shutil.copy(osp.join(run, f'iter_{TRAIN + TRANSFER}.pth'), start)
            with open(osp.join(st_run, 'last_checkpoint'), 'w') as f:
                f.write(start)
            train(cfgs['st'], st_run, seed, resume=True)
            variants_st = {}
            for i, (row, (stage, body)) in enumerate(ST_VARIANTS.items()):
                vcfg = osp.join(wd, f'st_variant{i}.py')
                write_config(vcfg, data_root, stage_body([dict(
                    name='self_train', iters=SELF_TRAIN, **stage)]) +
                    f'load_from = {start!r}\n' + body)
                vrun = osp.join(wd, f'st_variant{i}_seed{seed}')
                train(vcfg, vrun, seed)
                variants_st[row] = val_metrics(vrun)[SELF_TRAIN]
            save(f'stages/{seed}', dict(
                st_variants=variants_st,
                seconds=seconds, train=m[TRAIN],
                transfer=m[TRAIN + TRANSFER],
                ast=m[TRAIN + TRANSFER + SELF_TRAIN],
                st=val_metrics(st_run)[TRAIN + TRANSFER + SELF_TRAIN],
                kld=kld_curve(run),
                probe=probe(cfgs['ast'],
                            osp.join(run, f'iter_{TRAIN}.pth'))))
        for i, row in enumerate(variants):
            vrun = osp.join(wd, f'variant{i}_seed{seed}')
            train(cfgs[row], vrun, seed)
            value = dict(transfer=val_metrics(vrun)[TRAIN + TRANSFER])
            if row.startswith('recipe: latent'):
                value['kld'] = kld_curve(vrun)
                value['probe'] = probe(cfgs[row],
                                       osp.join(vrun, f'iter_{TRAIN}.pth'))
            save(f'{row}/{seed}', value)
        print(f'seed {seed} done', flush=True)
    write_table(results, args.out, ORDER, (TRAIN, TRANSFER, SELF_TRAIN),
                args.data_seed)


if __name__ == '__main__':
    main()
