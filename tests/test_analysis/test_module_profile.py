"""analysis/module_profile.py: a training iteration's operators charged to
the module that ran them, forward and backward, on a hand-made model."""
import torch
import torch.nn as nn

from mmseg_sign.analysis.module_profile import (NO_MODULE, markdown,
                                                module_profile,
                                                profiled_modules)


class _Net(nn.Module):

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(4 * 6 * 6, 2))

    def forward(self, x):
        return self.head(self.conv(x))


def test_operators_go_to_the_module_that_ran_them():
    torch.manual_seed(0)
    net = _Net()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    x = torch.randn(2, 3, 8, 8)

    def step():
        loss = net(x).pow(2).sum()  # outside any module
        loss.backward()
        opt.step()
        opt.zero_grad()

    assert set(profiled_modules(net, depth=1)) == {'conv', 'head'}
    assert set(profiled_modules(net)) == {'conv', 'head', 'head.0', 'head.1'}
    table = module_profile(net, step, iterations=2, depth=1)

    def ops(module, backward):
        return {
            op
            for op, times in table.get(module, {}).items() if times[backward]
        }

    # forward under the module; backward by autograd's sequence numbers
    assert 'aten::convolution' in ops('conv', 0) or \
        'aten::mkldnn_convolution' in ops('conv', 0)
    assert 'aten::convolution_backward' in ops('conv', 1)
    assert {'aten::addmm'} <= ops('head', 0)
    assert 'aten::mm' in ops('head', 1)  # Linear's backward
    # the loss, its backward and the optimizer: no module ran them
    assert 'aten::pow' in ops(NO_MODULE, 0)
    assert 'aten::pow' not in ops('conv', 0) | ops('head', 0)
    assert any(k.startswith(f'{NO_MODULE} Optimizer.step#SGD') for k in table)
    # nothing of the conv's backward was charged elsewhere
    for module in table:
        if module != 'conv':
            assert 'aten::convolution_backward' not in ops(module, 1)
    text = markdown(table, 2, 'toy step', min_share=0)
    assert text.splitlines()[1].startswith('toy step: ')
    assert text.splitlines()[2] == ''  # markdown: a table after a blank line
    assert '| conv |' in text and '| head |' in text


def test_a_profile_charges_every_operator_once():
    """The table's total is the profiler's self CPU time of every operator
    (each counted once, in one module or in none)."""
    from torch.profiler import ProfilerActivity, profile

    from mmseg_sign.analysis.module_profile import (RANGE, attribute,
                                                    module_ranges)
    net = _Net()
    x = torch.randn(2, 3, 8, 8)
    with module_ranges(profiled_modules(net)), profile(
            activities=[ProfilerActivity.CPU]) as prof:
        net(x).sum().backward()
    events = prof.events()
    table = attribute(events)
    charged = sum(f + b for ops in table.values() for f, b in ops.values())
    expected = sum(
        e.self_cpu_time_total for e in events if not e.name.startswith(RANGE))
    assert abs(charged - expected) < 1e-6 * max(expected, 1)
