# CaGNet + AST on CamVid with ImageNet features: cagnet_lite0_camvid-480x360,
# then SIGN's annealed self-training (the stage of sign_lite0_camvid-480x360:
# eq. 16, T = 2, every ignored pixel a candidate, the train stage's update).
# Not in the paper, which applies AST to SIGN only (docs/camvid.md). Its
# first two stages are cagnet_lite0_camvid-480x360_st's, so
# tools/toy_table.py starts it from that run's checkpoint at the end of
# transfer.
_base_ = ['./cagnet_lite0_camvid-480x360.py']
train_cfg = dict(stages=[*_base_.train_cfg.stages, _base_.ast_stage])
