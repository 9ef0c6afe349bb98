"""Gradient averaging of the multi-optimizer train_step with 2 CPU
processes (gloo): DDP's all-reduce during backward (``ParamGroupDDP``,
attached by ``ZeroShotDataParallel``) against per-rank gradients computed
independently, and, over every SIGN stage, bit for bit against the
hand-written average after backward (the project's earlier path)."""
import os
import socket

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

# every test here starts a tool process or trains a run
pytestmark = pytest.mark.slow


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def spawn_two(fn, *args):
    """``mp.spawn(fn)`` on 2 processes with a fresh port and a queue (the
    last argument); the ranks' results, sorted. A run killed by SIGABRT is
    started once more: gloo can abort ('terminate called without an active
    exception') while a heavily loaded machine tears its threads down after
    the work is done, which says nothing about the code under test."""
    for attempt in range(2):
        queue = mp.get_context('spawn').Queue()
        try:
            mp.spawn(
                fn, args=(2, free_port(), *args, queue), nprocs=2, join=True)
        except mp.ProcessExitedException as err:
            if err.signal_name != 'SIGABRT' or attempt:
                raise
            continue
        return sorted((queue.get() for _ in range(2)), key=lambda r: r[0])


def worker(rank, world_size, port, queue):
    os.environ.update(MASTER_ADDR='127.0.0.1', MASTER_PORT=str(port))
    dist.init_process_group('gloo', rank=rank, world_size=world_size)
    try:
        from mmengine.optim import OptimWrapper

        from mmseg_sign.engine import ZeroShotDataParallel
        from mmseg_sign.engine.optim_wrappers.gradient_sync import \
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
        want = flat_start - torch.stack(gathered).mean(0)
        results = [
            rank,
            torch.equal(starts[0], starts[1]),
            not torch.equal(gathered[0], gathered[1])
        ]
        for path in ('ddp', 'after_backward'):
            model.load_state_dict(dict(zip(('weight', 'bias'), start)))
            ow = OptimWrapper(torch.optim.SGD(model.parameters(), lr=1.0))
            if path == 'ddp':
                wrapped.attach_grad_sync(ow)
                loss = ow.grad_sync(lambda: wrapped.module(x).pow(2).mean())
            else:
                loss = wrapped.module(x).pow(2).mean()
            update_params(ow, loss)
            after = torch.cat(
                [p.detach().flatten() for p in model.parameters()])
            all_after = [torch.zeros_like(after) for _ in range(world_size)]
            dist.all_gather(all_after, after)
            results += [
                torch.allclose(after, want, atol=1e-6),
                all(torch.equal(a, all_after[0]) for a in all_after),
                after.tolist()
            ]  # exact floats, no shared memory
        queue.put(tuple(results))
        # gloo aborts ('terminate called without an active exception') when
        # one rank tears its group down while the other is still talking
        dist.barrier()
    finally:
        dist.destroy_process_group()


def test_two_process_gradients_are_averaged():
    results = spawn_two(worker)
    for (rank, same_start, grads_differ, ddp_mean, ddp_equal, ddp_after,
         hand_mean, hand_equal, hand_after) in results:
        assert same_start, ('ZeroShotDataParallel did not broadcast rank '
                            "0's weights")

        assert grads_differ, 'ranks saw the same data; the test is void'
        assert ddp_mean, f'rank {rank}: DDP step != mean of rank gradients'
        assert hand_mean, f'rank {rank}: step != mean of rank gradients'
        assert ddp_equal and hand_equal, f'rank {rank}: ranks differ'
        assert ddp_after == hand_after, \
            f'rank {rank}: DDP and the hand-written average differ'


def sign_worker(rank, world_size, port, emb_path, amp_dtype, queue):
    """Every SIGN stage (train; transfer, both modes and both blocks;
    self-training, both updates) on two ranks with different data: the
    DDP path (ZeroShotDataParallel) and the hand-written average after
    backward (the same model stepped outside it) step bit-equal weights;
    also in mixed precision (``amp_dtype``: every wrapper autocasts, and in
    float16 scales its loss, skipping the same steps on both ranks)."""
    os.environ.update(MASTER_ADDR='127.0.0.1', MASTER_PORT=str(port))
    dist.init_process_group('gloo', rank=rank, world_size=world_size)
    try:
        from mmseg.utils import register_all_modules

        import mmseg_sign  # noqa: F401
        from mmseg_sign.engine import ZeroShotDataParallel
        register_all_modules(init_default_scope=True)
        from model_utils import batch, optim_wrappers, tiny_model

        plan = [('train', {}, 2),
                ('transfer', dict(mode='alternate', block_iters=1), 2),
                ('transfer', dict(mode='classifier'), 1),
                ('self_train', dict(mode='AST', synth_weight=0.5), 2),
                ('self_train', dict(mode='ST', update='classifier'), 1)]
        out = []
        for classifier in ('linear', 'shared_trunk'):
            torch.manual_seed(rank)  # rank 0's weights win the broadcast
            models, wrappers = [], []
            for path in ('ddp', 'after_backward'):
                torch.manual_seed(0)
                model = tiny_model(emb_path, classifier)
                model.train()
                wrapped = ZeroShotDataParallel(model)
                models.append((path, wrapped))
                wrappers.append(
                    optim_wrappers(
                        model,
                        'train' if classifier == 'linear' else 'classifier',
                        amp_dtype=amp_dtype))
            step = 0
            for stage, opts, iters in plan:
                if classifier != 'linear' and stage == 'self_train' and \
                        opts.get('update', 'train') == 'train':
                    continue  # the wrappers built for 'classifier'
                for (path, wrapped), ow in zip(models, wrappers):
                    wrapped.module.set_stage(stage, **opts)
                for i in range(iters):
                    data = batch()
                    for s in data['data_samples']:  # other labels per rank
                        y = s.gt_sem_seg.data
                        s.gt_sem_seg.data = torch.where(
                            y == 255, y, (y + rank) % 3)
                    data['inputs'] = [
                        x.flip(-1) if rank else x for x in data['inputs']
                    ]
                    for (path, wrapped), ow in zip(models, wrappers):
                        wrapped.module.stage_iter = i
                        torch.manual_seed(100 + 10 * step + rank)
                        if path == 'ddp':
                            wrapped.train_step(data, ow)
                        else:  # the earlier ZeroShotDataParallel
                            wrapped._broadcast_buffers()
                            wrapped.module.train_step(data, ow)
                    step += 1
                    a, b = (w.module.state_dict() for _, w in models)
                    differ = [k for k in a if not torch.equal(a[k], b[k])]
                    # weights only: each rank's BN statistics follow its
                    # own batch until the next step's broadcast
                    flat = torch.cat([
                        p.detach().flatten()
                        for p in models[0][1].module.parameters()
                    ])
                    gathered = [
                        torch.zeros_like(flat) for _ in range(world_size)
                    ]
                    dist.all_gather(gathered, flat)
                    out.append((classifier, stage, opts.get('mode'), i, differ,
                                torch.equal(gathered[0], gathered[1])))
            attached = [
                n for n, w in wrappers[0].items()
                if getattr(w, 'grad_sync', None) is not None
            ]
            out.append((classifier, 'attached', sorted(attached)))
        queue.put((rank, out))
        dist.barrier()
    finally:
        dist.destroy_process_group()


@pytest.mark.parametrize('amp_dtype', [None, 'float16'])
def test_two_process_sign_stages_ddp_equals_hand_average(
        embedding_table, amp_dtype):
    for rank, out in spawn_two(sign_worker, embedding_table[0], amp_dtype):
        steps = [o for o in out if o[1] != 'attached']
        assert len(steps) == 2 * 8 - 2
        for classifier, stage, mode, i, differ, ranks_equal in steps:
            where = f'rank {rank}, {classifier}, {stage} {mode} iter {i}'
            assert not differ, f'{where}: DDP != hand-written average ' \
                f'in {differ[:3]}'
            assert ranks_equal, f'{where}: weights differ across ranks'
        attached = {o[0]: o[2] for o in out if o[1] == 'attached'}
        assert 'segmentor' in attached['linear'] and \
            'self_train_discriminator' in attached['linear']


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
            x = torch.randn(
                8,
                3,
                generator=torch.Generator().manual_seed(10 * rank +
                                                        step)) + rank
            wrapped.train_step(x, None)
        out = []
        for t in (*wrapped.module.at_start, wrapped.module.bn.running_mean):
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
    for rank, start1, start2, end in spawn_two(buffer_worker):
        assert start1 and start2, f'rank {rank}: statistics not broadcast'
        assert not end, 'ranks saw the same data; the test is void'
