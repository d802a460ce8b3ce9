"""PyTorch networks in and out: nn.Sequential of Linear layers and activations <-> uqnn's MLP, and
convolutional and residual networks (Conv2d, pooling, Flatten, GroupNorm, eval-mode BatchNorm2d,
torchvision-style BasicBlock and ResNet) <-> uqnn's cnn model (docs/networks.md)."""
from __future__ import annotations

import numpy as np

_ACTIVATIONS = {"Tanh": "tanh", "ReLU": "relu", "SiLU": "silu", "Sigmoid": "sigmoid", "Identity": "identity"}
SUPPORTED = "nn.Linear, nn.Tanh, nn.ReLU, nn.SiLU, nn.Sigmoid, nn.Identity (one activation type between the Linear layers)"
SUPPORTED_CNN = ("nn.Sequential of nn.Conv2d (dilation 1, zero padding), nn.MaxPool2d, nn.AvgPool2d (count_include_pad), "
                 "nn.AdaptiveAvgPool2d(1), nn.Flatten, nn.Linear, nn.GroupNorm, nn.BatchNorm2d (eval mode), a filter "
                 "response normalisation module (parameters weight, bias, tau; attribute eps), nn.ReLU, nn.Tanh, nn.SiLU, "
                 "nn.Sigmoid, nn.Identity, and torchvision-style BasicBlock and ResNet modules")
_CNN_TYPES = ("Conv2d", "MaxPool2d", "AvgPool2d", "AdaptiveAvgPool2d", "Flatten", "GroupNorm", "BatchNorm2d")


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


def _is_convolutional(module) -> bool:
    """True when the module holds anything beyond Linear layers and activations (a cnn, not an MLP)."""
    mods = list(module.modules())
    return any(type(m).__name__ in _CNN_TYPES or _is_basic_block(m) or _is_resnet(m) or _is_frn(m) for m in mods)


def _is_basic_block(m) -> bool:
    return all(hasattr(m, a) for a in ("conv1", "bn1", "conv2", "bn2", "downsample")) and not hasattr(m, "conv3")


def _is_resnet(m) -> bool:
    return all(hasattr(m, a) for a in ("conv1", "bn1", "relu", "maxpool", "layer1", "avgpool", "fc"))


def _is_frn(m) -> bool:
    return all(hasattr(m, a) for a in ("weight", "bias", "tau", "eps")) and not list(m.children())


def _pair(value, what: str, where: str) -> list:
    if isinstance(value, int):
        return [value, value]
    value = tuple(value)
    if len(value) != 2 or not all(isinstance(v, int) for v in value):
        raise ValueError(f"from_torch: {where}: {what} {value!r} is not supported (an int or a pair of ints)")
    return list(value)


class _CnnTranslator:
    """Walks a module, building uqnn's explicit layer list (names = the module paths, so that
    uqnn's parameter blocks are the state_dict's keys) and theta in uqnn's parameter order."""

    def __init__(self):
        self.theta: list[np.ndarray] = []
        self.shapes: dict[str, tuple] = {}

    def _param(self, key: str, tensor) -> None:
        self.shapes[key] = tuple(tensor.shape)
        self.theta.append(tensor.detach().double().cpu().numpy().reshape(-1))

    def _unsupported(self, m, path: str, why: str = "") -> ValueError:
        where = f" (at '{path}')" if path else ""
        return ValueError(f"from_torch: {type(m).__name__}{where} is not supported{why}; supported are {SUPPORTED_CNN}")

    def walk(self, m, path: str) -> list:
        import torch.nn as nn

        name = type(m).__name__
        at = path or name
        if isinstance(m, nn.Sequential):
            out = []
            for child_name, child in m.named_children():
                out += self.walk(child, f"{path}.{child_name}" if path else child_name)
            return out
        if name in _ACTIVATIONS:
            return [] if name == "Identity" else [{"type": "activation", "activation": _ACTIVATIONS[name]}]
        if isinstance(m, nn.Conv2d):
            if tuple(m.dilation) != (1, 1):
                raise self._unsupported(m, path, f": dilation {tuple(m.dilation)} (only 1)")
            if m.padding_mode != "zeros":
                raise self._unsupported(m, path, f": padding_mode '{m.padding_mode}' (only 'zeros')")
            padding = m.padding
            if isinstance(padding, str):
                if padding == "valid":
                    padding = (0, 0)
                elif tuple(m.stride) == (1, 1) and all(k % 2 == 1 for k in m.kernel_size):
                    padding = tuple(k // 2 for k in m.kernel_size)  # 'same' with odd kernels
                else:
                    raise self._unsupported(m, path, f": padding '{padding}' with kernel {m.kernel_size}")
            layer = {"type": "conv", "name": path, "out": m.out_channels, "kernel": list(m.kernel_size),
                     "stride": list(m.stride), "padding": _pair(padding, "padding", at), "groups": m.groups,
                     "bias": m.bias is not None}
            self._param(f"{path}.weight", m.weight)
            if m.bias is not None:
                self._param(f"{path}.bias", m.bias)
            return [layer]
        if isinstance(m, (nn.MaxPool2d, nn.AvgPool2d)):
            if m.ceil_mode:
                raise self._unsupported(m, path, ": ceil_mode=True")
            if isinstance(m, nn.MaxPool2d) and _pair(m.dilation, "dilation", at) != [1, 1]:
                raise self._unsupported(m, path, ": dilation (only 1)")
            if isinstance(m, nn.AvgPool2d) and (not m.count_include_pad or m.divisor_override is not None):
                raise self._unsupported(m, path, ": count_include_pad=False or divisor_override")
            kernel = _pair(m.kernel_size, "kernel_size", at)
            stride = _pair(m.stride if m.stride is not None else m.kernel_size, "stride", at)
            return [{"type": "maxpool" if isinstance(m, nn.MaxPool2d) else "avgpool", "kernel": kernel, "stride": stride,
                     "padding": _pair(m.padding, "padding", at)}]
        if isinstance(m, nn.AdaptiveAvgPool2d):
            size = m.output_size
            if size not in (1, (1, 1), [1, 1]):
                raise self._unsupported(m, path, f": output_size {size!r} (only 1, global average pooling)")
            return [{"type": "gap"}]
        if isinstance(m, nn.Flatten):
            if m.start_dim != 1 or m.end_dim != -1:
                raise self._unsupported(m, path, f": start_dim {m.start_dim}, end_dim {m.end_dim} (only 1, -1)")
            return [{"type": "flatten"}]
        if isinstance(m, nn.Linear):
            self._param(f"{path}.weight", m.weight)
            if m.bias is not None:
                self._param(f"{path}.bias", m.bias)
            return [{"type": "linear", "name": path, "out": m.out_features, "bias": m.bias is not None}]
        if isinstance(m, nn.GroupNorm):
            if not m.affine:
                raise self._unsupported(m, path, ": affine=False")
            self._param(f"{path}.weight", m.weight)
            self._param(f"{path}.bias", m.bias)
            return [{"type": "groupnorm", "name": path, "groups": m.num_groups, "eps": m.eps}]
        if isinstance(m, nn.BatchNorm2d):
            if m.training:
                raise self._unsupported(m, path, " in training mode (its batch statistics couple a minibatch's examples; "
                                                 "uqnn uses BatchNorm as the fixed affine map of eval mode: call .eval() first)")
            if not m.affine or m.running_mean is None:
                raise self._unsupported(m, path, ": affine=False or track_running_stats=False")
            self._param(f"{path}.weight", m.weight)
            self._param(f"{path}.bias", m.bias)
            return [{"type": "batchnorm", "name": path, "eps": m.eps,
                     "running_mean": m.running_mean.detach().double().cpu().tolist(),
                     "running_var": m.running_var.detach().double().cpu().tolist()}]
        if _is_frn(m):
            for p in ("weight", "bias", "tau"):
                self._param(f"{path}.{p}", getattr(m, p))
            return [{"type": "frn", "name": path, "eps": float(m.eps)}]
        if _is_basic_block(m):
            relu = getattr(m, "relu", None)
            act = _ACTIVATIONS.get(type(relu).__name__, None) if relu is not None else "relu"
            if act is None:
                raise self._unsupported(relu, f"{path}.relu")
            body = (self.walk(m.conv1, f"{path}.conv1") + self.walk(m.bn1, f"{path}.bn1")
                    + ([] if act == "identity" else [{"type": "activation", "activation": act}])
                    + self.walk(m.conv2, f"{path}.conv2") + self.walk(m.bn2, f"{path}.bn2"))
            shortcut = [] if m.downsample is None else self.walk(m.downsample, f"{path}.downsample")
            return [{"type": "residual", "body": body, "shortcut": shortcut, "activation": act}]
        if _is_resnet(m):
            out = self.walk(m.conv1, "conv1") + self.walk(m.bn1, "bn1") + self.walk(m.relu, "relu")
            out += self.walk(m.maxpool, "maxpool")
            for stage in ("layer1", "layer2", "layer3", "layer4"):
                if hasattr(m, stage):
                    out += self.walk(getattr(m, stage), stage)
            return out + self.walk(m.avgpool, "avgpool") + [{"type": "flatten"}] + self.walk(m.fc, "fc")
        raise self._unsupported(m, path)


def cnn_spec(module, input_shape) -> dict:
    """uqnn's cnn description of a PyTorch network with the same weights: {"model": "cnn",
    "description" (model.json's, for ``uqnn._core.Model``), "theta" (uqnn's order, which is the
    state_dict's), "input_shape", "output_dim", "shapes" (each parameter's PyTorch shape)}."""
    from . import _core

    if input_shape is None:
        raise ValueError("from_torch: a convolutional network needs input_shape=(C, H, W), the shape of one example "
                         "(PyTorch's modules do not record it)")
    shape = [int(s) for s in input_shape]
    if len(shape) == 2:
        shape = [1, *shape]
    tr = _CnnTranslator()
    layers = tr.walk(module, "")
    description = {"kind": "cnn", "input_shape": shape, "layers": layers, "init": "he"}
    model = _core.Model(description)  # checks every shape (ValueError naming the layer)
    for name, _, rows, cols in model.param_blocks:  # e.g. an nn.Linear whose in_features is not its input's size
        torch_shape = tr.shapes[name]
        if int(np.prod(torch_shape)) != rows * cols:
            raise ValueError(f"from_torch: {name} has shape {tuple(torch_shape)} but its input of shape {tuple(shape)} gives "
                             f"{rows} x {cols} values (is input_shape {tuple(shape)} right?)")
    theta = np.concatenate(tr.theta) if tr.theta else np.zeros(0)
    return {"model": "cnn", "description": model.description, "theta": theta, "input_shape": tuple(shape),
            "output_dim": model.output_dim, "shapes": tr.shapes}


def from_torch(module, input_shape=None) -> dict:
    """uqnn's description of a PyTorch network with the same weights.

    An ``nn.Sequential`` of Linear layers and Tanh/ReLU/SiLU/Sigmoid/Identity activations gives the
    MLP's {"hidden", "activation", "theta", ...} (``uqnn.BNN.from_torch(module, method=...)`` fits
    from it). A network with convolutions, pooling, normalisations or residual blocks gives the cnn
    model's {"model": "cnn", "description", "theta", ...} and needs ``input_shape=(C, H, W)``. An
    unsupported module raises ValueError naming it and listing what is supported."""
    if _is_convolutional(module) or input_shape is not None:
        return cnn_spec(module, input_shape)
    return sequential_spec(module)


def _without_names(layers: list) -> list:
    out = []
    for l in layers:
        l = {k: v for k, v in l.items() if k != "name"}
        for k in ("body", "shortcut"):
            if k in l:
                l[k] = _without_names(l[k])
        out.append(l)
    return out


def cnn_layer_list(spec: dict) -> tuple[str, str]:
    """The layer list (``--layers``) and activation that build ``cnn_spec``'s network, the same
    layers in the same order (its parameter names aside); ValueError when the network has no such
    list (two activation types, a rectangular kernel, BatchNorm statistics, ...)."""
    from . import _core

    description = spec["description"]
    layers = description["layers"]
    tokens, activations = [], set()

    def square(l, key):
        a, b = l[key]
        if a != b:
            raise ValueError(f"{l['type']} {l.get('name', '')}: {key} {l[key]} is not square")
        return a

    def window(l):
        return square(l, "kernel"), square(l, "stride"), square(l, "padding")

    def norm_option(l, channels):
        t = l["type"]
        if t == "groupnorm":
            return "" if l["groups"] == np.gcd(channels, 8) else f"gn{l['groups']}"
        return {"frn": "frn", "batchnorm": "bn"}.get(t, "?")

    try:
        last = len(layers) - 1
        if layers[last]["type"] != "linear":
            raise ValueError("the network does not end in nn.Linear")
        for i, l in enumerate(layers[:last]):
            t = l["type"]
            if t == "conv":
                k, st, p = window(l)
                tokens.append(f"conv{l['out']}k{k}" + (f"s{st}" if st != 1 else "") + (f"p{p}" if p else "")
                              + (f"g{l['groups']}" if l["groups"] > 1 else "") + ("" if l["bias"] else "nb"))
            elif t in ("maxpool", "avgpool"):
                k, st, p = window(l)
                tokens.append(("pool" if t == "maxpool" else "avgpool") + f"{k}" + (f"s{st}" if st != k else "") + (f"p{p}" if p else ""))
            elif t in ("gap", "flatten"):
                tokens.append(t)
            elif t == "linear":
                tokens.append(f"fc{l['out']}")
            elif t == "activation":
                activations.add(l["activation"])
            elif t == "groupnorm":
                tokens.append(f"gn{l['groups']}")
            elif t in ("frn", "batchnorm"):
                tokens.append({"frn": "frn", "batchnorm": "bn"}[t])
            elif t == "residual":
                body = l["body"]
                conv = body[0]
                out, st = conv["out"], square(conv, "stride")
                norms = [b for b in body if b["type"] in ("groupnorm", "frn", "batchnorm")]
                option = norm_option(norms[0], out) if norms else "nn"
                tokens.append(f"res{out}" + (f"s{st}" if st != 1 else "") + option)
                activations.add(l["activation"])
        if len(activations) > 1:
            raise ValueError(f"it mixes activations {sorted(activations)}")
        activation = activations.pop() if activations else "identity"
        text = ",".join(tokens)
        rebuilt = _core.cnn_description(text, list(description["input_shape"]), spec["output_dim"], activation)
    except (ValueError, KeyError, IndexError) as e:
        raise ValueError(f"from_torch: this network has no layer list (--layers) for a fit to take: {e}; "
                         "uqnn._core.Model(uqnn.from_torch(module, input_shape)['description']) evaluates it") from None
    if _without_names(rebuilt["layers"]) != _without_names(layers):
        raise ValueError(f"from_torch: this network has no layer list (--layers) for a fit to take (the nearest, "
                         f"'{text}' with {activation}, builds another network); "
                         "uqnn._core.Model(uqnn.from_torch(module, input_shape)['description']) evaluates it")
    return text, activation


def cnn_module(description: dict):
    """A PyTorch module computing the cnn model ``description`` (model.json's, or
    ``uqnn._core.cnn_description``'s): its state_dict keys are uqnn's parameter blocks' names, so
    ``cnn_state_dicts`` load into it. Float64; ``.float()`` for float32."""
    import torch
    import torch.nn as nn

    acts = {"tanh": nn.Tanh, "relu": nn.ReLU, "silu": nn.SiLU, "sigmoid": nn.Sigmoid, "identity": nn.Identity}

    class FilterResponseNorm2d(nn.Module):
        def __init__(self, channels, eps):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(channels))
            self.bias = nn.Parameter(torch.zeros(channels))
            self.tau = nn.Parameter(torch.zeros(channels))
            self.eps = eps

        def forward(self, x):
            x = x * torch.rsqrt(x.pow(2).mean(dim=(2, 3), keepdim=True) + self.eps)
            shape = (1, -1, 1, 1)
            return torch.max(self.weight.view(shape) * x + self.bias.view(shape), self.tau.view(shape))

    class Sine(nn.Module):
        def forward(self, x):
            return torch.sin(x)

    class Network(nn.Module):
        def __init__(self):
            super().__init__()
            self.steps = []

        def place(self, name, module):
            """Registers `module` under the dotted `name` (containers made on the way)."""
            parent, parts = self, name.split(".")
            for part in parts[:-1]:
                if not hasattr(parent, part):
                    parent.add_module(part, nn.Module())
                parent = getattr(parent, part)
            parent.add_module(parts[-1], module)
            return module

        def build(self, layers, shape):
            steps = []
            for l in layers:
                c, h, w = shape
                t = l["type"]
                if t == "conv":
                    m = self.place(l["name"], nn.Conv2d(c, l["out"], tuple(l["kernel"]), tuple(l["stride"]), tuple(l["padding"]),
                                                        groups=l["groups"], bias=l["bias"]))
                    (kh, kw), (sh, sw), (ph, pw) = l["kernel"], l["stride"], l["padding"]
                    shape = (l["out"], (h + 2 * ph - kh) // sh + 1, (w + 2 * pw - kw) // sw + 1)
                elif t in ("maxpool", "avgpool"):
                    cls = nn.MaxPool2d if t == "maxpool" else nn.AvgPool2d
                    m = cls(tuple(l["kernel"]), tuple(l["stride"]), tuple(l["padding"]))
                    (kh, kw), (sh, sw), (ph, pw) = l["kernel"], l["stride"], l["padding"]
                    shape = (c, (h + 2 * ph - kh) // sh + 1, (w + 2 * pw - kw) // sw + 1)
                elif t == "gap":
                    m, shape = nn.AdaptiveAvgPool2d(1), (c, 1, 1)
                elif t == "flatten":
                    m, shape = (lambda x: x), (c * h * w, 1, 1)
                elif t == "linear":
                    lin = self.place(l["name"], nn.Linear(c * h * w, l["out"], bias=l["bias"]))
                    m = (lambda lin: lambda x: lin(x.flatten(1)).view(x.shape[0], -1, 1, 1))(lin)
                    shape = (l["out"], 1, 1)
                elif t == "activation":
                    m = Sine() if l["activation"] == "sine" else acts[l["activation"]]()
                elif t == "groupnorm":
                    m = self.place(l["name"], nn.GroupNorm(l["groups"], c, eps=l["eps"]))
                elif t == "frn":
                    m = self.place(l["name"], FilterResponseNorm2d(c, l["eps"]))
                elif t == "batchnorm":
                    m = self.place(l["name"], nn.BatchNorm2d(c, eps=l["eps"]))
                    with torch.no_grad():
                        m.running_mean.copy_(torch.tensor(l["running_mean"]))
                        m.running_var.copy_(torch.tensor(l["running_var"]))
                elif t == "residual":
                    body, out = self.build(l["body"], shape)
                    shortcut, _ = self.build(l["shortcut"], shape)
                    act = Sine() if l["activation"] == "sine" else acts[l["activation"]]()
                    m = (lambda body, shortcut, act: lambda x: act(run(body, x) + run(shortcut, x)))(body, shortcut, act)
                    shape = out
                else:
                    raise ValueError(f"cnn_module: layer type {t!r} is not known")
                steps.append(m)
            return steps, shape

        def forward(self, x):
            return run(self.steps, x.view(x.shape[0], *self.input_shape)).flatten(1)

    def run(steps, x):
        for step in steps:
            x = step(x)
        return x

    net = Network()
    net.input_shape = tuple(description["input_shape"])
    net.steps, _ = net.build(description["layers"], net.input_shape)
    return net.double().eval()


def cnn_state_dicts(draws: np.ndarray, description: dict, shapes: dict | None = None, names: list | None = None) -> list:
    """Weight draws (S, K) of a cnn model -> one state dict per draw, keyed by the parameter blocks'
    names (the module paths when the model came from ``from_torch``; ``names`` renames the blocks,
    in order), with PyTorch's shapes (``shapes`` from from_torch, else conv weights
    [out, in/groups, kh, kw] and vectors [C]); eval-mode BatchNorm layers get their running
    statistics. Likelihood extras are dropped."""
    import torch

    from . import _core

    model = _core.Model(description)
    blocks = model.param_blocks
    if names is not None:
        if len(names) != len(blocks):
            raise ValueError(f"{len(names)} names for {len(blocks)} parameter blocks")
        rename = dict(zip((b[0] for b in blocks), names))
        prefix = {b.rsplit(".", 1)[0]: n.rsplit(".", 1)[0] for b, n in rename.items()}
    else:
        rename, prefix = {}, {}
    kernels, buffers = {}, {}

    def visit(layers):
        for l in layers:
            if l["type"] == "conv":
                kernels[l["name"]] = l["kernel"]
            elif l["type"] == "batchnorm":
                buffers[l["name"]] = l
            elif l["type"] == "residual":
                visit(l["body"])
                visit(l["shortcut"])

    visit(description["layers"])
    out = []
    for theta in np.atleast_2d(np.asarray(draws, dtype=np.float64)):
        sd = {}
        for name, offset, rows, cols in blocks:
            values = theta[offset:offset + rows * cols]
            layer = name.rsplit(".", 1)[0]
            if shapes and rename.get(name, name) in shapes:
                shape = shapes[rename.get(name, name)]
            elif name.endswith(".weight") and layer in kernels:
                kh, kw = kernels[layer]
                shape = (rows, cols // (kh * kw), kh, kw)
            else:
                shape = (rows, cols) if cols > 1 else (rows,)
            sd[rename.get(name, name)] = torch.tensor(values.reshape(shape))
        for name, l in buffers.items():
            name = prefix.get(name, name)
            sd[f"{name}.running_mean"] = torch.tensor(l["running_mean"], dtype=torch.float64)
            sd[f"{name}.running_var"] = torch.tensor(l["running_var"], dtype=torch.float64)
            sd[f"{name}.num_batches_tracked"] = torch.tensor(0)
        out.append(sd)
    return out


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
