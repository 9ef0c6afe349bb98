# SIGN on COCO-Stuff 164k, 171 classes (15 unseen), DeepLab-v2 R101, with
# the authors' recipe (docs/reproduction.md lists every difference): the
# model, the dataset and the schedule (stage plan, optimizers, schedulers,
# hooks) are the bases below.
# Class embeddings: the published CaGNet vectors (the dataset base says how
# to make the table).
_base_ = [
    '../_base_/models/sign_deeplabv2_r101.py',
    '../_base_/datasets/coco_stuff164k_zs.py',
    'mmseg::_base_/default_runtime.py',
    '../_base_/schedules/sign_cocostuff_40k_6k.py',  # train 40k, transfer 6k
]
custom_imports = dict(imports=['mmseg_sign'], allow_failed_imports=False)

model = dict(
    data_preprocessor=dict(size={{_base_.crop_size}}),
    decode_head=dict(_base_.head_classes, gen_unseen_rate=59)
)  # unseen share of sampled labels: 15·60/1056 = 85 %
log_processor = dict(by_epoch=False)
