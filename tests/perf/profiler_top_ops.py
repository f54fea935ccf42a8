"""The same tiny training loop profiled on torch and on paddle: the top ops of each uniform table. Run by hand:

    python tests/perf/profiler_top_ops.py [--top 5] [--batch 16] [--frames 200]

The model is our own tiny speech classifier (Conv1d 80->64, k=3, ReLU, mean over time, Linear 64->10) on random
80-dim features; SGD; one thread on both; 30 steps with batch_range=[10,20]; the same data on both.
"""

from __future__ import annotations

import argparse
import tempfile

import numpy as np

from speechperf import get_backend
from speechperf.views.profile import timing_lines


def torch_step(x, y):
    import torch

    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv1d(80, 64, 3, padding=1), torch.nn.ReLU())
    head = torch.nn.Linear(64, 10)
    opt = torch.optim.SGD([*model.parameters(), *head.parameters()], lr=0.01)
    tx, ty = torch.from_numpy(x), torch.from_numpy(y)

    def step():
        loss = torch.nn.functional.cross_entropy(head(model(tx).mean(-1)), ty)
        loss.backward()
        opt.step()
        opt.zero_grad()

    return step


def paddle_step(x, y):
    from speechperf.backends.paddle import import_paddle

    paddle = import_paddle()
    paddle.base.core.set_num_threads(1)
    paddle.seed(0)
    model = paddle.nn.Sequential(paddle.nn.Conv1D(80, 64, 3, padding=1), paddle.nn.ReLU())
    head = paddle.nn.Linear(64, 10)
    opt = paddle.optimizer.SGD(learning_rate=0.01, parameters=[*model.parameters(), *head.parameters()])
    px, py = paddle.to_tensor(x), paddle.to_tensor(y)

    def step():
        loss = paddle.nn.functional.cross_entropy(head(model(px).mean(axis=-1)), py)
        loss.backward()
        opt.step()
        opt.clear_grad()

    return step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=5)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--frames", type=int, default=200)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((args.batch, 80, args.frames)).astype(np.float32)
    y = rng.integers(0, 10, args.batch).astype(np.int64)
    out = tempfile.mkdtemp(prefix="speechperf_top_ops_")
    for name, make in (("torch", torch_step), ("paddle", paddle_step)):
        step = make(x, y)
        prof = get_backend(name).step_profiler(f"batch_range=[10,20]; profile_path={out}")
        prof.echo = False
        with prof:
            for _ in range(30):
                step()
                prof.step(num_samples=args.batch)
        s = prof.summary
        print(
            f"\n{name}: top {args.top} of {len(s.ops)} ops, sorted by total; steps {s.steps[0]}..{s.steps[-1]}; "
            f"{s.source}"
        )
        print(f"  {'op':<60} {'calls':>5} {'total ms':>9} {'avg ms':>8}")
        for o in s.top(args.top):
            print(f"  {o.name:<60} {o.calls:>5} {o.total_ns / 1e6:>9.3f} {o.avg_ns / 1e6:>8.3f}")
        print("  " + "; ".join(timing_lines(s.to_document())[1:]))


if __name__ == "__main__":
    main()
