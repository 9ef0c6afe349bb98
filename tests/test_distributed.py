"""Gradient averaging of the multi-optimizer train_step with 2 CPU
processes (gloo), against per-rank gradients computed independently."""
import os
import socket

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def worker(rank, world_size, port, queue):
    os.environ.update(MASTER_ADDR='127.0.0.1', MASTER_PORT=str(port))
    dist.init_process_group('gloo', rank=rank, world_size=world_size)
    try:
        from mmengine.optim import OptimWrapper

        from mmseg_sign.engine import ZeroShotDataParallel
        from mmseg_sign.models.segmentors.zero_shot_encoder_decoder import \
            update_params

        torch.manual_seed(rank)  # different initial weights on each rank
        model = torch.nn.Linear(3, 2)
        wrapped = ZeroShotDataParallel(model)  # broadcasts rank 0's weights
        start = [p.detach().clone() for p in model.parameters()]
        flat_start = torch.cat([p.flatten() for p in start])
        starts = [torch.zeros_like(flat_start) for _ in range(world_size)]
        dist.all_gather(starts, flat_start)
        x = torch.randn(4, 3, generator=torch.Generator().manual_seed(rank))
        # local gradient of this rank's loss, computed on a copy
        ref = torch.nn.Linear(3, 2)
        ref.load_state_dict(model.state_dict())
        ref(x).pow(2).mean().backward()
        local = torch.cat([p.grad.flatten() for p in ref.parameters()])
        gathered = [torch.zeros_like(local) for _ in range(world_size)]
        dist.all_gather(gathered, local)
        ow = OptimWrapper(torch.optim.SGD(model.parameters(), lr=1.0))
        update_params(ow, wrapped.module(x).pow(2).mean())
        after = torch.cat([p.detach().flatten() for p in model.parameters()])
        want = torch.cat([p.flatten() for p in start]) - torch.stack(
            gathered).mean(0)
        all_after = [torch.zeros_like(after) for _ in range(world_size)]
        dist.all_gather(all_after, after)
        queue.put((rank, torch.equal(starts[0], starts[1]),
                   torch.allclose(after, want, atol=1e-6),
                   all(torch.equal(a, all_after[0]) for a in all_after),
                   not torch.equal(gathered[0], gathered[1])))
        # gloo aborts ('terminate called without an active exception') when
        # one rank tears its group down while the other is still talking
        dist.barrier()
    finally:
        dist.destroy_process_group()


def test_two_process_gradients_are_averaged():
    ctx = mp.get_context('spawn')
    queue = ctx.Queue()
    mp.spawn(worker, args=(2, free_port(), queue), nprocs=2, join=True)
    results = sorted(queue.get() for _ in range(2))
    for rank, same_start, matches_mean, ranks_equal, grads_differ in results:
        assert same_start, 'ZeroShotDataParallel did not broadcast rank 0\'s weights'

        assert grads_differ, 'ranks saw the same data; the test is void'
        assert matches_mean, f'rank {rank}: step != mean of rank gradients'
        assert ranks_equal, f'rank {rank}: weights differ across ranks'


def buffer_worker(rank, world_size, port, queue):
    os.environ.update(MASTER_ADDR='127.0.0.1', MASTER_PORT=str(port))
    dist.init_process_group('gloo', rank=rank, world_size=world_size)
    try:
        from mmseg_sign.engine import ZeroShotDataParallel

        class BNModel(torch.nn.Module):
            """Records its BN statistics when a step starts, then updates
            them on this rank's data (as a training forward does)."""

            def __init__(self):
                super().__init__()
                self.bn = torch.nn.BatchNorm1d(3)
                self.at_start = []

            def train_step(self, data, optim_wrapper):
                self.at_start.append(self.bn.running_mean.clone())
                self.bn.train()(data)
                return {}

        wrapped = ZeroShotDataParallel(BNModel())
        for step in range(2):
            x = torch.randn(8, 3, generator=torch.Generator().manual_seed(
                10 * rank + step)) + rank
            wrapped.train_step(x, None)
        out = []
        for t in (*wrapped.module.at_start,
                  wrapped.module.bn.running_mean):
            gathered = [torch.zeros_like(t) for _ in range(world_size)]
            dist.all_gather(gathered, t)
            out.append(torch.equal(gathered[0], gathered[1]))
        queue.put((rank, *out))
        dist.barrier()
    finally:
        dist.destroy_process_group()


def test_two_process_buffers_follow_rank_0():
    """Like DDP's broadcast_buffers: each step starts from rank 0's BN
    statistics, so the processes do not drift apart."""
    ctx = mp.get_context('spawn')
    queue = ctx.Queue()
    mp.spawn(buffer_worker, args=(2, free_port(), queue), nprocs=2,
             join=True)
    for rank, start1, start2, end in sorted(queue.get() for _ in range(2)):
        assert start1 and start2, f'rank {rank}: statistics not broadcast'
        assert not end, 'ranks saw the same data; the test is void'
