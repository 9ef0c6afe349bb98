# SIGN on COCO-Stuff 164k, 171 classes (15 unseen), DeepLab-v2 R101, with
# the authors' recipe (docs/reproduction.md lists every difference): the
# model, the dataset and the schedule (stage plan, optimizers, schedulers,
# hooks) are the bases below.
# Class embeddings: the published CaGNet vectors (docs/user_guide.md, "Class embeddings"):
#   python tools/dataset_converters/cagnet_word_vectors.py --dataset cocostuff \
#       --fasttext fasttext.pkl --word2vec word2vec.pkl \
#       --out data/embeddings/cocostuff171_cagnet_fasttext_word2vec.npz
_base_ = [
    '../_base_/models/sign_deeplabv2_r101.py',
    '../_base_/datasets/coco_stuff164k_zs.py',
    'mmseg::_base_/default_runtime.py',
    '../_base_/schedules/sign_40k_6k.py',  # train 40k, transfer 6k
]
custom_imports = dict(imports=['mmseg_sign'], allow_failed_imports=False)

model = dict(
    data_preprocessor=dict(size=(368, 368)),
    decode_head=dict(
        num_classes=171,
        gen_unseen_rate=59,  # unseen share of sampled labels: 15·60/1056 = 85 %
        class_embeddings='data/embeddings/'
        'cocostuff171_cagnet_fasttext_word2vec.npz'))
log_processor = dict(by_epoch=False)

# the authors' COCO-Stuff transfer: synthetic weight 1, Adam 1e-5; 4k
# iterations of self-training (appended by sign_cocostuff_{st,ast}.py)
train_cfg = dict(stages=[
    _base_.train_cfg.stages[0],
    dict(_base_.train_cfg.stages[1], synth_weight=1.0),
])
self_train_iters = 4000
optim_wrapper = dict(
    transfer=dict(optimizer=dict(lr=1e-5)),
    transfer_generator=dict(optimizer=dict(lr=1e-5)))
