"""Peak memory of an SGLD fit of a large PyTorch module through uqnn.TorchModel, at K = 1M and 10M
parameters, and of reading the run back: a module of one nn.Linear (inputs x outputs weights), 256
rows, minibatches of 64, `--draws` draws kept (no warmup beyond what makes 20 steps). The fit and the
read-back each run in a child process and print their own peak resident memory (getrusage's
ru_maxrss, Linux: KiB); the draws' own size (draws x K x 8 bytes) is printed beside them. Above
100,000 parameters the draws go to draws.npy (--draws-format auto).

Run: PYTHONPATH=build/python python3 bench/torch_large_k_memory.py [--draws 100] [--sizes 1M,10M]
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

FIT = r"""
import resource, sys, numpy as np, torch, uqnn
inputs, outputs, draws, out = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
torch.manual_seed(0)
net = torch.nn.Linear(inputs, outputs)
rng = np.random.default_rng(0)
X = rng.normal(size=(256, inputs)).astype(np.float32)
y = rng.normal(size=(256, outputs)).astype(np.float32)
est = uqnn.TorchModel(net, loss="gaussian", noise=1.0, method="sgld", step_size=1e-7, sg_batch_size=64, sg_lp_every=0,
                      chains=1, warmup=max(0, 20 - draws), draws=draws, chain_init="random", progress=False, out=out)
est.fit(X, y)
print("peak_kib", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""

READ = r"""
import resource, sys, numpy as np, torch, uqnn
inputs, out = int(sys.argv[1]), sys.argv[2]
est = uqnn.load(out)
d = est.draws  # draws.npy, mapped
rng = np.random.default_rng(1)
mean = est.predict(rng.normal(size=(8, inputs)).astype(np.float32))
print("draws", d.shape, type(d).__name__, "prediction", mean.shape)
print("peak_kib", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def child(code, *args):
    t = time.time()
    run = subprocess.run([sys.executable, "-c", code, *map(str, args)], check=True, capture_output=True, text=True)
    peak = [int(line.split()[1]) for line in run.stdout.splitlines() if line.startswith("peak_kib")][0]
    return peak / 1024, time.time() - t


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--draws", type=int, default=100)
    parser.add_argument("--sizes", default="1M,10M")
    args = parser.parse_args()
    shapes = {"1M": (1000, 999), "10M": (1000, 9999)}
    for label in args.sizes.split(","):
        inputs, outputs = shapes[label]
        K = inputs * outputs + outputs
        with tempfile.TemporaryDirectory() as out:
            fit_mb, fit_s = child(FIT, inputs, outputs, args.draws, out)
            files = sorted(f for f in os.listdir(out) if f.startswith("draws"))
            read_mb, read_s = child(READ, inputs, out)
        print(f"K = {K} ({label}), {args.draws} draws ({args.draws * K * 8 / 2**20:.0f} MB as doubles; files {', '.join(files)}): "
              f"fit peak resident {fit_mb:.0f} MB ({fit_s:.1f} s), read-back peak {read_mb:.0f} MB ({read_s:.1f} s)", flush=True)


if __name__ == "__main__":
    main()
