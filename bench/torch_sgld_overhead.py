"""SGLD on a ResNet-20-sized PyTorch module through uqnn's PyTorch-backed model (uqnn.TorchModel:
uqnn's SGLD in C++ asks PyTorch for each minibatch gradient) against a hand-written PyTorch SGLD
loop, in one run: the same module, data, minibatch size, step size, prior and float32 arithmetic.

Both do per step: a minibatch of 128 CIFAR-sized images (3 x 32 x 32), a forward and backward pass
of the module, the Gaussian prior's gradient, and theta += eps grad + sqrt(2 eps) N(0, I). uqnn's
time per step is its sampler's own (metrics["info"]["sampling_seconds"], without writing the
draws), the difference of a run of 2 x steps and one of steps over steps: its chain's start (a
full-data gradient, the first state) is a fixed cost the loop does not have. The loop's is wall
time over `steps` steps. Both run alternately, best of `--repeats`.

Run: PYTHONPATH=build/python python3 bench/torch_sgld_overhead.py [--steps 40] [--threads 1]
"""
import argparse
import math
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import uqnn


class BasicBlock(nn.Module):
    """He et al. 2016's block, normalisation-free (no coupling of a minibatch's examples)."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=True)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=True)
        self.shortcut = nn.Conv2d(cin, cout, 1, stride, bias=False) if (stride != 1 or cin != cout) else nn.Identity()

    def forward(self, x):
        return F.relu(self.conv2(F.relu(self.conv1(x))) * 0.2 + self.shortcut(x))


class ResNet20(nn.Module):
    """ResNet-20 for CIFAR-10 (He et al. 2016, section 4.2): 3 stages of 3 blocks, 16/32/64 channels."""

    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3, 1, 1)
        blocks, cin = [], 16
        for cout, stride in ((16, 1), (32, 2), (64, 2)):
            for b in range(3):
                blocks.append(BasicBlock(cin, cout, stride if b == 0 else 1))
                cin = cout
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(64, classes)

    def forward(self, x):
        h = self.blocks(F.relu(self.stem(x)))
        return self.fc(h.mean(dim=(2, 3)))


def hand_written_sgld(net, X, y, steps, eps, batch, prior_sigma, seed):
    """The loop a PyTorch user writes: Welling & Teh 2011 with uqnn's convention, theta += eps grad
    log p + sqrt(2 eps) xi, the minibatch likelihood scaled by N / batch."""
    g = torch.Generator().manual_seed(seed)
    params = [p for p in net.parameters()]
    N = len(X)
    start = time.perf_counter()
    for _ in range(steps):
        idx = torch.randint(N, (batch,), generator=g)
        out = net(X[idx])
        log_lik = -F.cross_entropy(out, y[idx], reduction="sum") * (N / batch)
        log_prior = -0.5 * sum((p * p).sum() for p in params) / prior_sigma**2
        grads = torch.autograd.grad(log_lik + log_prior, params)
        with torch.no_grad():
            for p, gr in zip(params, grads):
                p.add_(eps * gr + math.sqrt(2 * eps) * torch.randn(p.shape, generator=g))
    return (time.perf_counter() - start) / steps


def uqnn_sampling_seconds(net, X, y, steps, eps, batch, prior_sigma, seed):
    est = uqnn.TorchModel(net, loss="cross_entropy", method="sgld", step_size=eps, sg_batch_size=batch, sg_lp_every=0,
                          chains=1, warmup=steps - 2, draws=2, chain_init="random", prior="gaussian", prior_sigma=prior_sigma,
                          seed=seed, threads=1, progress=False)
    est.fit(X, y)
    return est.metrics_["info"]["sampling_seconds"]


def uqnn_sgld(net, X, y, steps, eps, batch, prior_sigma, seed):
    """Per step: the sampler's time for 2 x steps minus its time for steps, over steps. The chain's
    start costs a full-data gradient (its first state) whatever the number of steps; the
    difference leaves it out, as the hand-written loop has none."""
    short = uqnn_sampling_seconds(net, X, y, steps, eps, batch, prior_sigma, seed)
    long = uqnn_sampling_seconds(net, X, y, 2 * steps, eps, batch, prior_sigma, seed)
    return (long - short) / steps


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rows", type=int, default=1024)
    parser.add_argument("--threads", type=int, default=1, help="PyTorch's intra-op threads (both sides)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(args.rows, 3, 32, 32)).astype(np.float32)
    y = rng.integers(0, 10, size=args.rows)
    torch.manual_seed(0)
    net = ResNet20()
    K = sum(p.numel() for p in net.parameters())
    print(f"ResNet-20-sized module: {K} parameters, float32, batch 128 of {args.rows} rows, {args.steps} steps, "
          f"torch {torch.__version__}, {args.threads} thread(s)")
    Xt, yt = torch.tensor(X), torch.tensor(y)
    best_torch, best_uqnn = float("inf"), float("inf")
    for r in range(args.repeats):
        loop_net = ResNet20()
        loop_net.load_state_dict(net.state_dict())
        best_torch = min(best_torch, hand_written_sgld(loop_net, Xt, yt, args.steps, 1e-7, 128, 1.0, r))
        best_uqnn = min(best_uqnn, uqnn_sgld(net, X, y, args.steps, 1e-7, 128, 1.0, r))
        print(f"  repeat {r + 1}: hand-written {best_torch * 1e3:.1f} ms/step, uqnn {best_uqnn * 1e3:.1f} ms/step (best so far)")
    print(f"hand-written PyTorch SGLD: {best_torch * 1e3:.1f} ms per step")
    print(f"uqnn.TorchModel sgld:      {best_uqnn * 1e3:.1f} ms per step")
    print(f"overhead: {100 * (best_uqnn / best_torch - 1):+.1f}%")


if __name__ == "__main__":
    main()
