# ZS3Net + AST on CamVid with ImageNet features: zs3net_lite0_camvid-480x360,
# then SIGN's annealed self-training (the stage of sign_lite0_camvid-480x360:
# eq. 16, T = 2, every ignored pixel a candidate, the train stage's update).
# Not in the paper, which applies AST to SIGN only: this row says what AST
# does for a method without the SIM (docs/camvid.md). Its first two stages
# are zs3net_lite0_camvid-480x360_st's, so tools/toy_table.py starts it from
# that run's checkpoint at the end of transfer.
_base_ = ['./zs3net_lite0_camvid-480x360.py']
train_cfg = dict(stages=[*_base_.train_cfg.stages, _base_.ast_stage])
