"""PyTorch networks in and out: nn.Sequential of Linear layers and activations <-> uqnn's MLP."""
from __future__ import annotations

import numpy as np

_ACTIVATIONS = {"Tanh": "tanh", "ReLU": "relu", "SiLU": "silu", "Sigmoid": "sigmoid", "Identity": "identity"}
SUPPORTED = "nn.Linear, nn.Tanh, nn.ReLU, nn.SiLU, nn.Sigmoid, nn.Identity (one activation type between the Linear layers)"


def sequential_spec(module) -> dict:
    """Architecture and weights of an ``nn.Sequential``: {"input_dim", "hidden", "output_dim",
    "activation", "theta"}, theta in uqnn's parameter order (per layer the weight matrix [out, in]
    row-major, as PyTorch stores it, then the bias)."""
    import torch.nn as nn

    layers = list(module.children()) if isinstance(module, nn.Sequential) else [module]
    linears, activations = [], set()
    for layer in layers:
        name = type(layer).__name__
        if isinstance(layer, nn.Linear):
            if layer.bias is None:
                raise ValueError(f"from_torch: {layer} has no bias; uqnn's layers have one (supported: {SUPPORTED})")
            linears.append(layer)
        elif name in _ACTIVATIONS:
            if name != "Identity":
                activations.add(_ACTIVATIONS[name])
        else:
            raise ValueError(f"from_torch: {name} is not supported; supported are {SUPPORTED}")
    if not linears:
        raise ValueError(f"from_torch: no nn.Linear layer (supported: {SUPPORTED})")
    if len(activations) > 1:
        raise ValueError(f"from_torch: mixed activations {sorted(activations)}; uqnn's MLP uses one ({SUPPORTED})")
    theta = []
    for lin in linears:
        w = lin.weight.detach().double().cpu().numpy()
        theta += [w.flatten(), lin.bias.detach().double().cpu().numpy()]
    return {"input_dim": linears[0].in_features, "hidden": tuple(l.out_features for l in linears[:-1]),
            "output_dim": linears[-1].out_features, "activation": activations.pop() if activations else "identity",
            "theta": np.concatenate(theta)}


def from_torch(module) -> dict:
    """uqnn's description of a PyTorch ``nn.Sequential`` of Linear layers and Tanh/ReLU/SiLU/
    Sigmoid/Identity activations with the same weights: {"hidden", "activation", "theta", ...}.
    ``uqnn.BNN.from_torch(module, method=...)`` fits from it; an unsupported layer raises ValueError
    listing what is supported."""
    return sequential_spec(module)


def state_dicts(draws: np.ndarray, hidden, input_dim: int, output_dim: int) -> list:
    """Weight draws (S, K) -> one ``nn.Sequential`` state dict per draw (keys "0.weight", "0.bias",
    "2.weight", ... as in nn.Sequential(Linear, act, Linear, ...)); likelihood extras are dropped."""
    import torch

    sizes = [input_dim, *hidden, output_dim]
    out = []
    for theta in np.asarray(draws):
        sd, k = {}, 0
        for i, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:])):
            w = theta[k:k + fan_in * fan_out].reshape(fan_out, fan_in)
            k += fan_in * fan_out
            b = theta[k:k + fan_out]
            k += fan_out
            sd[f"{2 * i}.weight"], sd[f"{2 * i}.bias"] = torch.tensor(w), torch.tensor(b)
        out.append(sd)
    return out
