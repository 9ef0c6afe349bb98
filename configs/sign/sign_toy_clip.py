# SIGN on the toy data with a 512-d CLIP text-embedding table instead of
# the toy word vectors (same model, stages and schedule as sign_toy.py).
#
# The table comes from the text tower of a local Hugging Face CLIP
# checkpoint (nothing is downloaded at run time; pip install
# 'mmseg-sign[clip]'). Save one once, on a machine with internet:
#
#   python -c "from transformers import CLIPModel, CLIPTokenizer; \
#     n = 'openai/clip-vit-base-patch32'; \
#     CLIPModel.from_pretrained(n).save_pretrained('checkpoints/clip-b32'); \
#     CLIPTokenizer.from_pretrained(n).save_pretrained('checkpoints/clip-b32')"
#
# then build the table (prompt templates averaged, L2-normalised):
#
#   python tools/make_toy_dataset.py  # data/toy
#   python tools/build_class_embeddings.py --dataset toy \
#     --source clip:checkpoints/clip-b32 \
#     --out data/toy/class_embeddings_clip.npz
#
# Add e.g. `--source data/toy/word_vectors/word2vec_like.txt` to
# concatenate word vectors (then the table is 512 + 300 = 812-d; the head
# takes its width from the table, embed_dim only sizes the placeholder
# used when the file is missing and the table comes from a checkpoint).
_base_ = ['./sign_toy.py']

model = dict(
    decode_head=dict(
        class_embeddings='data/toy/class_embeddings_clip.npz', embed_dim=512))
