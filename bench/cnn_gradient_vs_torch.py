"""One minibatch gradient (batch 125, 1 x 28 x 28 inputs) of a LeNet-5-like network and of the image
example's ResNet (resnet8w16), uqnn against PyTorch on the CPU, in one run, one thread, float64 and
float32: the same networks (uqnn._torch.cnn_module of uqnn's descriptions), the same weights and the
same loss, sum(C * f). PyTorch runs eagerly and as TorchScript (torch.jit.trace: the compiled variant
PyTorch 1.13 has; torch.compile came with 2.0). uqnn runs through its Python module (the C++ gradient
with the GIL released; bench/cnn_gradient_bench.cpp times it without Python).

First the gradients are checked against PyTorch's: in float64 they must agree to 1e-10 relative to the
largest entry, else the script stops. Then CPU time per gradient, best of 5 repetitions.

Run: PYTHONPATH=build/python python3 bench/cnn_gradient_vs_torch.py
"""
import os
import platform
import time

import numpy as np
import torch

from uqnn import _core
from uqnn._torch import cnn_module, cnn_state_dicts

NETWORKS = {"lenet5": "conv6k5p2,pool2,conv16k5,pool2,fc120,fc84", "resnet8w16": "resnet8w16"}
BATCH = 125


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def best_cpu_seconds(step, reps):
    for _ in range(2):
        step()
    best = float("inf")
    for _ in range(5):
        t = time.process_time()
        for _ in range(reps):
            step()
        best = min(best, (time.process_time() - t) / reps)
    return best


def main():
    torch.set_num_threads(1)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    rng = np.random.default_rng(1)
    print(f"{cpu_model()}, {time.strftime('%Y-%m-%d')}, PyTorch {torch.__version__}, one thread, batch {BATCH}; "
          f"load average {os.getloadavg()[0]:.1f}")
    rows = []
    for name, layers in NETWORKS.items():
        desc = _core.cnn_description(layers, [1, 28, 28], 10, "relu")
        model = _core.Model(desc)
        theta = model.initial_params(3)
        X = rng.normal(size=(BATCH, 784))
        C = rng.normal(size=(BATCH, 10))
        reps = 20 if name == "lenet5" else 3
        for dtype in (torch.float64, torch.float32):
            precision = "float64" if dtype == torch.float64 else "float32"
            model.set_precision(precision)
            net = cnn_module(desc)
            net.load_state_dict(cnn_state_dicts(theta[None, :], desc)[0])
            net = net.to(dtype)
            x, c = torch.tensor(X, dtype=dtype), torch.tensor(C, dtype=dtype)

            def torch_gradient(module):
                module.zero_grad()
                (module(x) * c).sum().backward()
                return np.concatenate([p.grad.detach().double().numpy().reshape(-1) for p in module.parameters()])

            reference = torch_gradient(net)
            _, grad = model.value_and_gradient(theta, X, C)
            error = np.max(np.abs(grad - reference)) / np.max(np.abs(reference))
            bound = 1e-10 if dtype == torch.float64 else 1e-4
            if not error <= bound:
                raise SystemExit(f"{name} {precision}: uqnn's gradient differs from PyTorch's by {error:.2e} (relative), above {bound:g}")
            traced = torch.jit.trace(net, x)
            np.testing.assert_allclose(torch_gradient(traced), reference, rtol=0, atol=1e-12 * np.max(np.abs(reference)))
            times = {
                "uqnn": best_cpu_seconds(lambda: model.value_and_gradient(theta, X, C), reps),
                "torch eager": best_cpu_seconds(lambda: torch_gradient(net), reps),
                "torchscript": best_cpu_seconds(lambda: torch_gradient(traced), reps),
            }
            rows.append((name, precision, model.num_params, error, times))
            print(f"{name} {precision}: gradient vs PyTorch {error:.1e} relative; " +
                  ", ".join(f"{k} {v * 1e3:.2f} ms" for k, v in times.items()), flush=True)
    print("\n| network | precision | parameters | uqnn | PyTorch eager | TorchScript | uqnn vs the faster PyTorch |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, precision, params, _, t in rows:
        best_torch = min(t["torch eager"], t["torchscript"])
        print(f"| {name} | {precision} | {params:,} | {t['uqnn'] * 1e3:.1f} ms | {t['torch eager'] * 1e3:.1f} ms | "
              f"{t['torchscript'] * 1e3:.1f} ms | {best_torch / t['uqnn']:.2f}x |")


if __name__ == "__main__":
    main()
