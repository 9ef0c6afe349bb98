# SIGN on the built-in toy data: all three stages (train, transfer, annealed
# self-training) in a few minutes on 2 CPU cores. The model (tiny ResNet-18,
# SIM, SIGNHead), the dataset and the schedule (stage plan 600 + 400 + 400,
# optimizers, schedulers, hooks) are the bases below.
# Data: `python tools/make_toy_dataset.py` (writes data/toy).
_base_ = [
    '../_base_/models/sign_r18-tiny_toy.py',
    '../_base_/datasets/toy.py',
    'mmseg::_base_/default_runtime.py',
    '../_base_/schedules/sign_toy_600_400_400.py',  # train, transfer, AST
]
custom_imports = dict(imports=['mmseg_sign'], allow_failed_imports=False)

model = dict(
    data_preprocessor=dict(size={{_base_.crop_size}}),  # the dataset's
    decode_head=dict(
        _base_.head_classes,
        gen_unseen_rate=3))  # unseen share of sampled labels: 3·4/19 = 63 %
randomness = dict(seed=0)
