"""One minibatch gradient (batch 125) of the networks of bench/cnn_gradient_bench.cpp in PyTorch
eager mode on the CPU, one thread, float64 and float32: the same networks (uqnn._torch.cnn_module
of their descriptions) and the same loss, sum(C * f). CPU time per gradient, best of 5 x 20.

Run: PYTHONPATH=build/python python3 bench/cnn_gradient_vs_torch.py
"""
import time

import numpy as np
import torch

from uqnn import _core
from uqnn._torch import cnn_module

NETWORKS = {"lenet5": "conv6k5p2,pool2,conv16k5,pool2,fc120,fc84", "resnet8": "resnet8w16"}


def main():
    torch.set_num_threads(1)
    rng = np.random.default_rng(1)
    for name, layers in NETWORKS.items():
        desc = _core.cnn_description(layers, [1, 28, 28], 10, "relu")
        for dtype in (torch.float64, torch.float32):
            net = cnn_module(desc).to(dtype)
            x = torch.tensor(rng.normal(size=(125, 784)), dtype=dtype)
            c = torch.tensor(rng.normal(size=(125, 10)), dtype=dtype)

            def step():
                net.zero_grad()
                (net(x) * c).sum().backward()

            for _ in range(3):
                step()
            best = float("inf")
            for _ in range(5):
                t = time.process_time()
                for _ in range(20 if name == "lenet5" else 3):
                    step()
                best = min(best, (time.process_time() - t) / (20 if name == "lenet5" else 3))
            params = sum(p.numel() for p in net.parameters())
            print(f"torch eager {name} {str(dtype).replace('torch.', '')}: {best * 1e3:.2f} ms CPU per gradient ({params} parameters)")


if __name__ == "__main__":
    main()
