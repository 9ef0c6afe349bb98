# SIGN on the toy data with 'river', one of sign_toy.py's unseen classes,
# kept out of the class list entirely: its pixels are void in training and
# in this config's evaluation, and the model has 9 classes (7 seen, 2
# unseen). `tools/add_classes.py` then adds it by name (docs/add_classes.md)
# and the config it writes evaluates all 10 classes, so the added class can
# be compared with the same class trained in as unseen by sign_toy.py.
_base_ = ['./sign_toy.py']

held_out = ['river']
train_dataloader = dict(dataset=dict(held_out_classes=held_out))
val_dataloader = dict(dataset=dict(held_out_classes=held_out))
test_dataloader = val_dataloader
model = dict(decode_head=dict(num_classes=9, held_out_classes=held_out))
