"""Any PyTorch module as a uqnn network: its outputs, gradients, Jacobian- and Hessian-vector
products over one flat parameter vector, computed by PyTorch, for uqnn's samplers, optimisers and
approximations in C++ (nn/external_model.hpp), and the frozen features of a pretrained network
for Bayesian last layers (docs/bring-your-own-model.md)."""
from __future__ import annotations

import copy
import functools
import json
import os
import threading
import uuid

import numpy as np

from ._estimator import BNN, DEFAULT_METHOD, DEFAULT_PRIOR, DEFAULT_PRIOR_SIGMA, DEFAULT_PROGRESS, DEFAULT_SEED, DEFAULT_THREADS, _store


def _torch_functions():
    """(functional_call, jvp or None). PyTorch 2.x has torch.func; Debian 12's 1.13 has the same
    functional call under nn.utils.stateless and forward-mode products only through
    torch.autograd.functional (the double-backward trick). Imported on first use: uqnn does not
    need PyTorch otherwise."""
    try:  # pragma: no cover - depends on the installed PyTorch
        from torch.func import functional_call, jvp
    except ImportError:  # PyTorch < 2.0
        from torch.nn.utils.stateless import functional_call
        jvp = None
    return functional_call, jvp

NETWORK_FILE = "torch_network.json"  # beside model.json: how the saved module maps to theta
MODULE_FILE = "torch_module.pt"      # the module itself (torch.save)


def _one_at_a_time(method):
    """Runs the method under the network's lock. Chains in parallel call the module from several
    threads; PyTorch releases the GIL inside its operations, and a functional call swaps the
    module's parameters while it runs (PyTorch 1.13), so two calls at once would mix them.
    Lock.acquire releases the GIL while it waits."""

    @functools.wraps(method)
    def locked(self, *args):
        with self._lock:
            return method(self, *args)

    return locked


def _prod(shape) -> int:
    out = 1
    for s in shape:
        out *= int(s)
    return out


class TorchNetwork:
    """A module's trainable parameters as one flat vector theta (named_parameters order, each
    tensor row-major, as its state_dict stores it), and the functions uqnn's C++ core calls on it.

    Parameters that do not require gradients (``p.requires_grad_(False)``), or that are not in
    ``subset`` when it is given, stay fixed at their values: the fit is over the rest (a
    subnetwork). Buffers (BatchNorm statistics) are the module's and stay as they are; the module is
    put in eval mode (batch statistics would couple the examples of a minibatch, and dropout would
    make the likelihood random).

    Inputs arrive as the module's floating dtype, shaped (n, *input_shape); a module that embeds
    tokens casts them itself (``x.long()``). Outputs are reshaped to (n, output_dim)."""

    def __init__(self, module, input_shape, subset=None, network_id: str | None = None):
        import torch

        # Eval mode: dropout off and BatchNorm the fixed map of its running statistics, so that the
        # likelihood is a deterministic sum over examples.
        self.module = module.eval()
        self.input_shape = tuple(int(s) for s in input_shape)
        named = [(n, p) for n, p in module.named_parameters()]
        if subset is not None:
            subset = list(subset)
            known = {n for n, _ in named}
            unknown = [s for s in subset if s not in known]
            if unknown:
                raise ValueError(f"subset: {unknown} are not parameters of the module; its parameters are {sorted(known)}")
            named = [(n, p) for n, p in named if n in set(subset)]
        else:
            named = [(n, p) for n, p in named if p.requires_grad]
        if not named:
            raise ValueError("the module has no trainable parameters to fit (all have requires_grad False, or subset is empty)")
        self.names = [n for n, _ in named]
        self.shapes = [tuple(p.shape) for _, p in named]
        self.sizes = [_prod(s) for s in self.shapes]
        dtypes = {p.dtype for _, p in named}
        if len(dtypes) != 1 or not next(iter(dtypes)).is_floating_point:
            raise ValueError(f"the module's parameters must share one floating dtype, found {sorted(map(str, dtypes))}")
        self.dtype = next(iter(dtypes))
        self.device = named[0][1].device
        self.initial = np.concatenate([p.detach().double().cpu().reshape(-1).numpy() for _, p in named])
        self.input_dim = _prod(self.input_shape)
        with torch.no_grad():
            probe = module(torch.zeros((1, *self.input_shape), dtype=self.dtype, device=self.device))
        self.output_dim = int(probe.reshape(1, -1).shape[1])
        self.blocks = []
        for name, shape in zip(self.names, self.shapes):
            rows = int(shape[0]) if len(shape) else 1
            cols = _prod(shape[1:]) if len(shape) > 1 else 1
            # A weight's fan-in (per-layer priors): the other dimensions of its first; a vector's: its layer's.
            self.blocks.append((name, rows, cols, max(cols, 1)))
        self.id = network_id or f"torch:{uuid.uuid4().hex}"
        self.description = f"PyTorch module {type(module).__name__}"
        self.can_reinitialise = any(hasattr(m, "reset_parameters") for m in module.modules())
        self._functional_call, self._func_jvp = _torch_functions()
        self._lock = threading.Lock()

    def __getstate__(self):
        state = dict(self.__dict__)
        del state["_lock"]
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._lock = threading.Lock()

    # -- theta <-> tensors ------------------------------------------------------------------------
    def _flat(self, theta, requires_grad=False):
        import torch

        t = torch.from_numpy(np.asarray(theta)).to(device=self.device, dtype=self.dtype)
        if t.data_ptr() == np.asarray(theta).__array_interface__["data"][0]:
            t = t.clone()  # never alias the caller's memory (autograd keeps leaves)
        return t.requires_grad_(requires_grad)

    def _params(self, flat):
        out, k = {}, 0
        for name, shape, size in zip(self.names, self.shapes, self.sizes):
            out[name] = flat[k:k + size].view(shape)
            k += size
        return out

    def _inputs(self, X):
        import torch

        X = np.asarray(X)
        return torch.from_numpy(X).to(device=self.device, dtype=self.dtype).reshape((X.shape[0], *self.input_shape))

    def _call(self, flat, x):
        y = self._functional_call(self.module, self._params(flat), (x,))
        return y.reshape(x.shape[0], -1)

    def state_dict(self, theta) -> dict:
        """The module's full state dict with theta's parameters (the rest as the module has them)."""
        import torch

        sd = {k: v.detach().clone() for k, v in self.module.state_dict().items()}
        k = 0
        for name, shape, size in zip(self.names, self.shapes, self.sizes):
            sd[name] = torch.tensor(np.asarray(theta[k:k + size]).reshape(shape), dtype=self.dtype)
            k += size
        return sd

    # -- what the C++ core calls (with the GIL held) ------------------------------------------------
    @_one_at_a_time
    def forward(self, theta, X):
        import torch

        with torch.no_grad():
            return self._call(self._flat(theta), self._inputs(X)).double().cpu().numpy()

    @_one_at_a_time
    def pullback(self, theta, X, cotangent):
        import torch

        flat = self._flat(theta, True)
        y = self._call(flat, self._inputs(X))
        dy = cotangent(np.ascontiguousarray(y.detach().double().cpu().numpy()))
        (g,) = torch.autograd.grad(y, flat, grad_outputs=torch.as_tensor(dy, dtype=y.dtype, device=y.device), allow_unused=True)
        return np.zeros(len(theta)) if g is None else g.double().cpu().numpy()

    @_one_at_a_time
    def jvp(self, theta, v, X):
        import torch

        x = self._inputs(X)
        flat, tangent = self._flat(theta), self._flat(v)
        if self._func_jvp is not None:
            _, out = self._func_jvp(lambda t: self._call(t, x), (flat,), (tangent,))
        else:
            _, out = torch.autograd.functional.jvp(lambda t: self._call(t, x), flat, tangent)
        return out.detach().double().cpu().numpy()

    @_one_at_a_time
    def weighted_hvp(self, theta, v, X, G):
        import torch

        flat = self._flat(theta, True)
        y = self._call(flat, self._inputs(X))
        weights = torch.as_tensor(np.asarray(G), dtype=y.dtype, device=y.device)
        (g,) = torch.autograd.grad((weights * y).sum(), flat, create_graph=True, allow_unused=True)
        if g is None or not g.requires_grad:  # the outputs are linear in theta
            return np.zeros(len(theta))
        (hv,) = torch.autograd.grad(g, flat, grad_outputs=self._flat(v), allow_unused=True)
        return np.zeros(len(theta)) if hv is None else hv.double().cpu().numpy()

    @_one_at_a_time
    def jacobian(self, theta, X):
        import torch

        flat = self._flat(theta, True)
        y = self._call(flat, self._inputs(X))
        n, T = y.shape
        J = np.zeros((n * T, len(theta)))
        for i in range(n):
            for o in range(T):
                (g,) = torch.autograd.grad(y[i, o], flat, retain_graph=True, allow_unused=True)
                if g is not None:
                    J[i * T + o] = g.double().cpu().numpy()
        return J

    @_one_at_a_time
    def reinitialise(self, seed):
        """Fresh parameters: the module's own reset_parameters() under PyTorch's generator seeded
        by `seed` (uqnn draws it from the run's seed: same seed, same starts)."""
        import torch

        fresh = copy.deepcopy(self.module)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(seed) % (2**63))
            for m in fresh.modules():
                if hasattr(m, "reset_parameters"):
                    m.reset_parameters()
        params = dict(fresh.named_parameters())
        return np.concatenate([params[n].detach().double().cpu().reshape(-1).numpy() for n in self.names])

    # -- files ------------------------------------------------------------------------------------
    def save(self, directory) -> None:
        """The module (torch.save) and how theta maps onto it, beside a run's model.json."""
        import torch

        torch.save(self.module, os.path.join(directory, MODULE_FILE))
        with open(os.path.join(directory, NETWORK_FILE), "w") as fh:
            json.dump({"id": self.id, "input_shape": list(self.input_shape), "names": self.names}, fh)


def load_torch_module(path):
    import torch

    try:
        return torch.load(path, weights_only=False)
    except TypeError:  # PyTorch < 1.13 has no weights_only
        return torch.load(path)


def _json_if_present(path):
    """The JSON document of `path`, or None when there is no such file."""
    if not os.path.exists(path):
        return None
    with open(path) as fh:
        return json.load(fh)


def register_saved_network(directory, module=None) -> TorchNetwork | None:
    """Registers the network of a saved run (its torch_network.json and torch_module.pt, or the
    given module) so that the run's model.json ({"kind": "external"}) can be read; None for runs of
    uqnn's own networks."""
    from . import _core

    meta = _json_if_present(os.path.join(directory, NETWORK_FILE))
    if meta is None:
        return None
    if module is None:
        module_path = os.path.join(directory, MODULE_FILE)
        if not os.path.exists(module_path):
            raise ValueError(f"{directory}: this run's network is a PyTorch module, and {MODULE_FILE} is missing; pass the module: "
                             "uqnn.load(path, module=...)")
        module = load_torch_module(module_path)
    net = TorchNetwork(module, meta["input_shape"], subset=meta["names"], network_id=meta["id"])
    _core.register_network(net)
    return net


class LastLayer:
    """A pretrained module's last ``nn.Linear`` (its head) on the frozen features that feed it:
    the features are computed by PyTorch (a forward hook on the head), and uqnn fits the head as its
    own Linear model on them, with any of its methods (NUTS included) at native speed."""

    def __init__(self, module, head_name: str | None = None, input_shape=None):
        import torch.nn as nn

        linears = [(n, m) for n, m in module.named_modules() if isinstance(m, nn.Linear)]
        if head_name is not None:
            linears = [(n, m) for n, m in linears if n == head_name]
        if not linears:
            raise ValueError("subset='last-layer': the module has no nn.Linear layer to put a posterior on")
        self.module = module
        self.head_name, self.head = linears[-1]
        if self.head.bias is None:
            raise ValueError(f"subset='last-layer': the last nn.Linear ('{self.head_name}') has no bias; uqnn's Linear model has one")
        self.input_shape = None if input_shape is None else tuple(int(s) for s in input_shape)
        self._checked = False

    def set_input_shape(self, shape) -> None:
        self.input_shape = tuple(int(s) for s in shape)

    def features(self, X, batch_size: int = 512) -> np.ndarray:
        """The head's inputs for rows X (n, prod(input_shape)), as float64 (n, in_features). The
        first batch checks that the module's output is the head's (no layer after it)."""
        import torch

        if self.input_shape is None:
            raise ValueError("LastLayer: input_shape is not known yet")
        dtype = self.head.weight.dtype
        device = self.head.weight.device
        captured = []
        hook = self.head.register_forward_hook(lambda m, inputs, output: captured.append(inputs[0].detach()))
        out = []
        was_training = self.module.training
        self.module.eval()
        try:
            with torch.no_grad():
                for start in range(0, len(X), batch_size):
                    x = torch.as_tensor(np.asarray(X[start:start + batch_size]), dtype=dtype, device=device)
                    captured.clear()
                    y = self.module(x.reshape((x.shape[0], *self.input_shape))).reshape(x.shape[0], -1)
                    if len(captured) != 1:
                        raise ValueError(f"subset='last-layer': the head '{self.head_name}' ran {len(captured)} times in one "
                                         "forward pass (once is needed)")
                    f = captured[0].reshape(x.shape[0], -1)
                    if not self._checked:
                        if not torch.allclose(self.head(f), y, rtol=1e-4, atol=1e-5):
                            raise ValueError(f"subset='last-layer': the module's output is not its last nn.Linear's "
                                             f"('{self.head_name}'; a layer comes after it): pass subset=[parameter names] "
                                             "to fit a subnetwork through PyTorch instead")
                        self._checked = True
                    out.append(f.double().cpu().numpy())
        finally:
            hook.remove()
            self.module.train(was_training)
        return np.ascontiguousarray(np.concatenate(out)) if out else np.zeros((0, self.head.in_features))

    def head_theta(self) -> np.ndarray:
        """The head's weights in uqnn's Linear-model order: the weight [out, in] row-major, then the bias."""
        return np.concatenate([self.head.weight.detach().double().cpu().reshape(-1).numpy(),
                               self.head.bias.detach().double().cpu().numpy()])

    def state_dict(self, theta) -> dict:
        """The module's full state dict with the head's weight and bias from theta."""
        import torch

        sd = {k: v.detach().clone() for k, v in self.module.state_dict().items()}
        w = self.head.weight
        n = w.numel()
        prefix = f"{self.head_name}." if self.head_name else ""
        sd[prefix + "weight"] = torch.tensor(np.asarray(theta[:n]).reshape(tuple(w.shape)), dtype=w.dtype)
        sd[prefix + "bias"] = torch.tensor(np.asarray(theta[n:n + self.head.out_features]), dtype=w.dtype)
        return sd

    def save(self, directory) -> None:
        import torch

        torch.save(self.module, os.path.join(directory, MODULE_FILE))
        with open(os.path.join(directory, LAST_LAYER_FILE), "w") as fh:
            json.dump({"head": self.head_name, "input_shape": list(self.input_shape)}, fh)

    @classmethod
    def load(cls, directory, module=None) -> "LastLayer | None":
        meta = _json_if_present(os.path.join(directory, LAST_LAYER_FILE))
        if meta is None:
            return None
        if module is None:
            module = load_torch_module(os.path.join(directory, MODULE_FILE))
        return cls(module, meta["head"], meta["input_shape"])


LAST_LAYER_FILE = "torch_last_layer.json"

_LOSSES = {"gaussian": "gaussian", "mse": "gaussian", "heteroscedastic": "heteroscedastic", "bernoulli": "bernoulli",
           "bce": "bernoulli", "categorical": "categorical", "cross_entropy": "categorical"}


class TorchModel(BNN):
    """Any PyTorch ``nn.Module`` as a Bayesian neural network: uqnn's methods (map, ens, rms,
    swag, sgld, sghmc, psgld, vi, nuts, hmc, mala, laplace) run on it, the log likelihood and
    its gradient over the module's flat parameter vector coming from PyTorch (on minibatches
    where the method uses them). The module's own weights start the fit.

    loss: "gaussian" (or "mse"; the noise sd learned unless ``noise`` is given),
        "heteroscedastic" (two outputs: mean and log sd), "bernoulli" (or "bce"; one logit),
        "categorical" (or "cross_entropy"; one logit per class, labels 0..K-1).
    input_shape: the shape of one example (default: X's, which may be (n, C, H, W) or
        (n, tokens)); inputs reach the module in its dtype, shaped (n, *input_shape).
    subset: parameter names to fit (the others stay as they are); default: every parameter
        that requires gradients.
    standardize: False by default (the module sees the data as given).

    Everything else is ``uqnn.BNN``'s: predict, predict_interval, sample_predictive,
    to_torch_state_dicts (the module's full state dicts), to_inference_data, save and
    ``uqnn.load``. See docs/bring-your-own-model.md."""

    def __init__(self, module=None, loss: str = "gaussian", input_shape=None, subset=None, noise: float | None = None,
                 prior: str = DEFAULT_PRIOR, prior_sigma: float = DEFAULT_PRIOR_SIGMA, standardize: bool = False,
                 method: str = DEFAULT_METHOD, seed: int = DEFAULT_SEED, threads: int = DEFAULT_THREADS,
                 progress: bool = DEFAULT_PROGRESS, out=None, method_options: dict | None = None, **options):
        _store(self, locals())

    hidden = ()
    activation = "identity"

    @property
    def likelihood(self) -> str:
        if self.loss not in _LOSSES:
            raise ValueError(f"loss: {self.loss!r} is not one of {sorted(_LOSSES)}")
        return _LOSSES[self.loss]

    def _torch_setup(self):
        if self.module is None:
            raise ValueError("TorchModel: no module given")
        return {"module": self.module, "input_shape": self.input_shape, "subset": self.subset, "last_layer": None}

    def _likelihood_options(self) -> dict:
        o = {"likelihood": self.likelihood, "noise": self.noise}
        if self.likelihood == "categorical":
            shape = self.input_shape if self.input_shape is not None else getattr(self, "_example_shape", None)
            if shape is not None:
                o["classes"] = TorchNetwork(self.module, shape, self.subset).output_dim
        return o

    def fit(self, X, y, resume: bool = False):
        _, self._example_shape = _rows_shape(X)
        return super().fit(X, y, resume)



def _rows_shape(X):
    a = np.asarray(X.detach().cpu().numpy() if hasattr(X, "detach") else X)
    return a, tuple(a.shape[1:]) if a.ndim > 1 else (1,)
