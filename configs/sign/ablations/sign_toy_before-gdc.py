# The project's earlier choices alone on the toy (after transfer): a linear
# G output, C and an MLP D as separate networks, the MMD kernel widths used
# as standard deviations (σ = 1, 2, 5, 10, 20).
_base_ = ['../sign_toy_transfer-only.py']
model = dict(
    decode_head=dict(
        generator_out_act=None,
        classifier='linear',
        mmd_kernel_variances=(1, 4, 25, 100, 400)))
optim_wrapper = dict(
    segmentor=dict(modules=['backbone', 'neck', 'decode_head.conv_seg']),
    discriminator=dict(modules=['decode_head.discriminator']),
    transfer=dict(
        modules=['decode_head.conv_seg', 'decode_head.discriminator']),
    self_train=dict(modules=['backbone', 'neck', 'decode_head.conv_seg']),
    self_train_discriminator=dict(modules=['decode_head.discriminator']))
