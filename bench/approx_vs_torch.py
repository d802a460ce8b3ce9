#!/usr/bin/env python3
"""Bayes-by-backprop VI epochs and deep-ensemble member fits on B2 (data/bench/README.md):
uqnn (bench/approx_bench, the library's fit_bayes_by_backprop / fit_deep_ensemble) against the same
training written here in PyTorch, double precision, one thread on one core (issue 4 item 10).
Driven by bench/approx_vs_torch.sh.

VI (seed 001 / vi.hpp): q = N(mu, softplus(rho)^2) mean field, N(0, 1) prior with the analytic KL,
per minibatch b of B = ceil(N / batch) the loss KL / B + (N / |b|) (1 / 2 sigma^2) sum_b (y - f(x; w))^2
averaged over S reparameterised draws w = mu + softplus(rho) eps, Adam. Two PyTorch variants: the S
draws in a Python loop (the usual way) and batched through torch.bmm; the faster is compared.
Ensemble member: nn.Sequential(Linear, Tanh, Linear, Tanh, Linear), MSE loss, Adam, minibatches
reshuffled every epoch.
CPU seconds (process time) per VI epoch and per member fit of E epochs.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_util import cpu_model  # noqa: E402

WIDTHS = {"B1": [1, 10, 10, 1], "B2": [5, 16, 16, 1]}
SIGMA = {"B1": 0.05, "B2": 0.1}


def load(shared_bench, pid):
    import numpy as np
    arr = lambda n: np.loadtxt(os.path.join(shared_bench, f"{pid}_{n}.csv"), delimiter=",", ndmin=1)
    return arr("X").reshape(-1, WIDTHS[pid][0]), arr("y").reshape(-1, 1)


def torch_vi(X, y, widths, sigma, epochs, batch, S, lr, batched, seed):
    import torch
    import torch.nn.functional as F
    torch.manual_seed(seed)
    N = X.shape[0]
    shapes = [(o, i) for i, o in zip(widths[:-1], widths[1:])]
    P = sum(o * i + o for o, i in shapes)
    mu = torch.empty(P, dtype=torch.float64).uniform_(-0.2, 0.2).requires_grad_(True)
    rho = torch.empty(P, dtype=torch.float64).uniform_(-5, -4).requires_grad_(True)
    opt = torch.optim.Adam([mu, rho], lr=lr)
    B = math.ceil(N / batch)

    def forward(w, xb):  # w [P] or [S, P]
        h, k = xb, 0
        for li, (o, i) in enumerate(shapes):
            if w.dim() == 1:
                W, b = w[k:k + o * i].view(o, i), w[k + o * i:k + o * i + o]
                h = h @ W.T + b
            else:
                W, b = w[:, k:k + o * i].view(-1, o, i), w[:, k + o * i:k + o * i + o]
                h = torch.bmm(h if h.dim() == 3 else h.expand(w.shape[0], -1, -1), W.transpose(1, 2)) + b[:, None, :]
            k += o * i + o
            if li + 1 < len(shapes):
                h = torch.tanh(h)
        return h

    for _ in range(epochs):
        perm = torch.randperm(N)
        for s in range(B):
            idx = perm[s * batch:(s + 1) * batch]
            xb, yb = X[idx], y[idx]
            sd = F.softplus(rho)
            kl = torch.sum(-torch.log(sd) + 0.5 * (sd ** 2 + mu ** 2) - 0.5)  # KL(q || N(0, 1))
            if batched:
                w = mu + sd * torch.randn(S, P, dtype=torch.float64)
                nll = (N / len(idx)) * 0.5 / sigma ** 2 * torch.sum((yb - forward(w, xb)) ** 2) / S
            else:
                nll = 0.0
                for _ in range(S):
                    w = mu + sd * torch.randn(P, dtype=torch.float64)
                    nll = nll + (N / len(idx)) * 0.5 / sigma ** 2 * torch.sum((yb - forward(w, xb)) ** 2) / S
            loss = kl / B + nll
            opt.zero_grad()
            loss.backward()
            opt.step()
    return float(loss)


def torch_member(X, y, widths, epochs, batch, lr, seed):
    import torch
    torch.manual_seed(seed)
    layers = []
    for li, (i, o) in enumerate(zip(widths[:-1], widths[1:])):
        layers.append(torch.nn.Linear(i, o).double())
        if li + 2 < len(widths):
            layers.append(torch.nn.Tanh())
    net = torch.nn.Sequential(*layers)
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    N = X.shape[0]
    for _ in range(epochs):
        perm = torch.randperm(N)
        for s in range(0, N, batch):
            idx = perm[s:s + batch]
            loss = torch.nn.functional.mse_loss(net(X[idx]), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
    return float(loss)


def run_torch(args):
    import torch
    torch.set_num_threads(1)
    Xn, yn = load(os.path.join(args.data, "bench"), args.problem)
    X, y = torch.tensor(Xn), torch.tensor(yn)
    widths, sigma = WIDTHS[args.problem], SIGMA[args.problem]
    out = {}
    for batched in (False, True):
        t0 = time.process_time()
        loss = torch_vi(X, y, widths, sigma, args.vi_epochs, args.batch_size, args.samples, args.learning_rate,
                        batched, args.seed)
        out["vi_batched" if batched else "vi_loop"] = dict(cpu_per_epoch=(time.process_time() - t0) / args.vi_epochs,
                                                          final_loss=loss)
    t0 = time.process_time()
    for j in range(args.members):
        loss = torch_member(X, y, widths, args.ens_epochs, args.batch_size, args.learning_rate, args.seed + j)
    out["ens"] = dict(cpu_per_member=(time.process_time() - t0) / args.members, final_loss=loss)
    print(json.dumps(out))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--part", default="all", choices=["all", "torch"])
    ap.add_argument("--data", required=True)
    ap.add_argument("--build", default="build")
    ap.add_argument("--problem", default="B2")
    ap.add_argument("--vi-epochs", type=int, default=50)
    ap.add_argument("--ens-epochs", type=int, default=100)
    ap.add_argument("--batch-size", type=int, default=100)
    ap.add_argument("--samples", type=int, default=5)
    ap.add_argument("--members", type=int, default=3)
    ap.add_argument("--learning-rate", type=float, default=1e-3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--core", default="0")
    ap.add_argument("--out", default="bench/results/approx.md")
    args = ap.parse_args()
    if args.part == "torch":
        run_torch(args)
        return
    pin = ["taskset", "-c", args.core]
    exe = os.path.join(args.build, "bench", "approx_bench")
    common = ["--problem", args.problem, "--batch-size", str(args.batch_size), "--learning-rate",
              str(args.learning_rate), "--seed", str(args.seed)]
    print("== uqnn", file=sys.stderr)
    vi = json.loads(subprocess.run(pin + [exe, "vi", "--epochs", str(args.vi_epochs), "--samples", str(args.samples)] +
                                   common, check=True, capture_output=True, text=True).stdout)
    ens = json.loads(subprocess.run(pin + [exe, "ens", "--epochs", str(args.ens_epochs), "--members",
                                           str(args.members)] + common, check=True, capture_output=True, text=True).stdout)
    print("== PyTorch", file=sys.stderr)
    t = json.loads(subprocess.run(pin + [sys.executable, __file__, "--part", "torch"] +
                                  [a for a in sys.argv[1:] if a != "--part"], check=True, capture_output=True,
                                  text=True).stdout)
    best_vi = min(t["vi_loop"]["cpu_per_epoch"], t["vi_batched"]["cpu_per_epoch"])
    n = 1200 if args.problem == "B2" else 20
    steps = math.ceil(n / args.batch_size)
    lines = [
        f"CPU: {cpu_model()}", "",
        f"{args.problem}, double precision, one thread on one core, batch {args.batch_size} ({steps} Adam steps per "
        f"epoch), learning rate {args.learning_rate:g}; CPU seconds:", "",
        "| task | uqnn | PyTorch | ratio (PyTorch / uqnn) |", "| --- | --- | --- | --- |",
        f"| VI epoch (Bayes by backprop, S = {args.samples}, {args.vi_epochs} epochs timed) | "
        f"{vi['cpu_seconds_per_unit'] * 1e3:.3g} ms | {t['vi_loop']['cpu_per_epoch'] * 1e3:.3g} ms (S in a loop), "
        f"{t['vi_batched']['cpu_per_epoch'] * 1e3:.3g} ms (S batched by bmm) | {best_vi / vi['cpu_seconds_per_unit']:.1f}x |",
        f"| deep-ensemble member fit ({args.ens_epochs} epochs, MSE, Adam; {args.members} members timed) | "
        f"{ens['cpu_seconds_per_unit'] * 1e3:.3g} ms | {t['ens']['cpu_per_member'] * 1e3:.3g} ms | "
        f"{t['ens']['cpu_per_member'] / ens['cpu_seconds_per_unit']:.1f}x |", "",
        f"Final losses (sanity): VI -ELBO uqnn {vi['final_loss']:.4g} (epoch estimate), PyTorch last step "
        f"{t['vi_batched']['final_loss']:.4g}; ensemble MSE uqnn {ens['final_loss']:.3g} (epoch mean), PyTorch last "
        f"batch {t['ens']['final_loss']:.3g}.",
    ]
    text = "\n".join(lines)
    print(text)
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as f:
        f.write(text + "\n")


if __name__ == "__main__":
    main()
