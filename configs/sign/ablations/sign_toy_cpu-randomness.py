# The shipped toy plan with every random number of the model drawn on the
# CPU and the weights initialised there (CPURandomnessHook): on a GPU the
# run starts from and draws what a CPU run of its seed does, so it differs
# from the CPU run only by what the GPU's kernels compute (docs/gpu.md;
# tools/analysis/gpu_check.sh runs it). On a CPU it is sign_toy.py to the
# bit.
_base_ = ['../sign_toy.py']
custom_hooks = [*_base_.custom_hooks, dict(type='CPURandomnessHook')]
