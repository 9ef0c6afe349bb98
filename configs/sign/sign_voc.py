# SIGN on Pascal VOC 2012 + SBD, 15 seen / 5 unseen, DeepLab-v2 R101, with
# the authors' recipe (docs/reproduction.md lists every difference): the
# model, the dataset and the schedule (stage plan, optimizers, schedulers,
# hooks) are the bases below.
# Class embeddings: the published CaGNet vectors (docs/user_guide.md, "Class embeddings"):
#   python tools/dataset_converters/cagnet_word_vectors.py --dataset voc \
#       --fasttext fasttext.pkl --word2vec word2vec.pkl \
#       --out data/embeddings/voc20_cagnet_fasttext_word2vec.npz
_base_ = [
    '../_base_/models/sign_deeplabv2_r101.py',
    '../_base_/datasets/voc12_aug_zs.py',
    'mmseg::_base_/default_runtime.py',
    '../_base_/schedules/sign_40k_6k.py',  # train 40k, transfer 6k
]
custom_imports = dict(imports=['mmseg_sign'], allow_failed_imports=False)

model = dict(
    data_preprocessor=dict(size=(368, 368)),
    decode_head=dict(
        num_classes=20,
        gen_unseen_rate=9,  # unseen share of sampled labels: 5·10/65 = 77 %
        class_embeddings='data/embeddings/'
        'voc20_cagnet_fasttext_word2vec.npz'))
log_processor = dict(by_epoch=False)
