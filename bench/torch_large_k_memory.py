"""Peak memory of an SGLD fit of a large PyTorch module through uqnn.TorchModel, at K = 1M and 10M
parameters: a module of one nn.Linear (inputs x outputs weights), 256 rows, minibatches of 64,
20 steps, `--draws` draws kept. Each K runs in a child process; its peak resident memory is the
child's ru_maxrss (Linux: KiB), and the draws' own size (draws x K x 8 bytes) is printed beside it.

Run: PYTHONPATH=build/python python3 bench/torch_large_k_memory.py [--draws 2]
"""
import argparse
import resource
import subprocess
import sys
import time

CHILD = r"""
import sys, tempfile, numpy as np, torch, uqnn
inputs, outputs, draws = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
torch.manual_seed(0)
net = torch.nn.Linear(inputs, outputs)
rng = np.random.default_rng(0)
X = rng.normal(size=(256, inputs)).astype(np.float32)
y = rng.normal(size=(256, outputs)).astype(np.float32)
with tempfile.TemporaryDirectory() as out:
    est = uqnn.TorchModel(net, loss="gaussian", noise=1.0, method="sgld", step_size=1e-7, sg_batch_size=64, sg_lp_every=0,
                          chains=1, warmup=20 - draws, draws=draws, chain_init="random", progress=False, out=out)
    est.fit(X, y)
"""


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--draws", type=int, default=2)
    args = parser.parse_args()
    for label, inputs, outputs in (("1M", 1000, 999), ("10M", 1000, 9999)):
        K = inputs * outputs + outputs
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        t = time.time()
        subprocess.run([sys.executable, "-c", CHILD, str(inputs), str(outputs), str(args.draws)], check=True)
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        print(f"K = {K} ({label}): peak resident {max(peak, before) / 1024:.0f} MB, {time.time() - t:.1f} s; "
              f"the {args.draws} draws themselves are {args.draws * K * 8 / 2**20:.0f} MB")


if __name__ == "__main__":
    main()
