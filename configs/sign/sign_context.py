# SIGN on Pascal Context, 33 classes (4 unseen), DeepLab-v2 R101, with
# the authors' recipe (docs/reproduction.md lists every difference): the
# model, the dataset and the schedule (stage plan, optimizers, schedulers,
# hooks) are the bases below.
# Class embeddings: the published CaGNet vectors (docs/user_guide.md, "Class embeddings"):
#   python tools/dataset_converters/cagnet_word_vectors.py --dataset context \
#       --fasttext fasttext.pkl --word2vec word2vec.pkl \
#       --out data/embeddings/context33_cagnet_fasttext_word2vec.npz
_base_ = [
    '../_base_/models/sign_deeplabv2_r101.py',
    '../_base_/datasets/pascal_context33_zs.py',
    'mmseg::_base_/default_runtime.py',
    '../_base_/schedules/sign_40k_6k.py',
]
custom_imports = dict(imports=['mmseg_sign'], allow_failed_imports=False)

model = dict(
    data_preprocessor=dict(size=(368, 368)),
    decode_head=dict(
        num_classes=33,
        gen_unseen_rate=14,  # unseen share of sampled labels: 4·15/89 = 67 %
        class_embeddings='data/embeddings/'
        'context33_cagnet_fasttext_word2vec.npz'))
log_processor = dict(by_epoch=False)

# the authors' Context plan: 10k iterations of transfer, 7k of
# self-training (appended by sign_context_{st,ast}.py)
train_cfg = dict(stages=[
    _base_.train_cfg.stages[0],
    dict(_base_.train_cfg.stages[1], iters=10000),
])
self_train_iters = 7000
