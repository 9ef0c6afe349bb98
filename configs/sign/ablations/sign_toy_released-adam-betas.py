# A detail of the authors' release alone on the toy (after transfer): Adam
# with torch's default betas (0.9, 0.999) for G, D and C
# (docs/reproduction.md).
_base_ = ['../sign_toy_transfer-only.py']
optim_wrapper = dict(
    generator=dict(optimizer=dict(betas=(0.9, 0.999))),
    discriminator=dict(optimizer=dict(betas=(0.9, 0.999))),
    transfer=dict(optimizer=dict(betas=(0.9, 0.999))),
    transfer_generator=dict(optimizer=dict(betas=(0.9, 0.999))))
