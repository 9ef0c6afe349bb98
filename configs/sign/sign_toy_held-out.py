# SIGN on the toy data with 'lamp' kept out of the class list entirely: its
# pixels are void in training and in this config's evaluation, and the model
# has 9 classes. `tools/add_classes.py` then adds it by name (docs/
# add_classes.md); the config it writes evaluates all 10 classes.
_base_ = ['./sign_toy.py']

held_out = ['lamp']
train_dataloader = dict(dataset=dict(held_out_classes=held_out))
val_dataloader = dict(dataset=dict(held_out_classes=held_out))
test_dataloader = val_dataloader
model = dict(decode_head=dict(num_classes=9, held_out_classes=held_out))
