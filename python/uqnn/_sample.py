"""uqnn.sample: uqnn's MCMC samplers on any log density."""
from __future__ import annotations

import ctypes
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from . import _core
from ._common import Interrupted, Reporter, import_arviz, log, summary_frame

STAT_NAMES = ["lp", "acceptance_rate", "step_size", "tree_depth", "n_steps", "diverging", "energy"]


@dataclass
class SampleResult:
    """Draws of ``uqnn.sample``: ``draws`` is (chains, draws, dim); ``sample_stats`` maps ArviZ's
    names (lp, acceptance_rate, step_size, tree_depth, n_steps, diverging, energy) to (chains, draws)."""

    draws: np.ndarray
    sample_stats: dict[str, np.ndarray]
    settings: dict[str, Any]
    seconds: float
    interrupted: bool = False
    param_names: list[str] = field(default_factory=list)

    def diagnostics(self):
        """ArviZ's summary columns per coordinate and for lp, as a pandas DataFrame."""
        draws = np.concatenate([self.sample_stats["lp"][:, :, None], self.draws], axis=2)
        return summary_frame(draws, ["lp"] + self.param_names)

    def to_inference_data(self):
        """An ``arviz.InferenceData`` with ``posterior`` (x: chain, draw, x_dim_0) and ``sample_stats``.
        Needs ArviZ (``pip install arviz``): ImportError saying so otherwise."""
        az = import_arviz()

        stats = {k: v.astype(bool) if k == "diverging" else v for k, v in self.sample_stats.items()}
        for k in ("tree_depth", "n_steps"):
            stats[k] = stats[k].astype(np.int64)
        return az.from_dict(posterior={"x": self.draws}, sample_stats=stats)


def _callback_address(f) -> int | None:
    """The address of a C function: a ctypes function pointer or a numba cfunc."""
    if isinstance(f, ctypes._CFuncPtr):
        return ctypes.cast(f, ctypes.c_void_p).value
    address = getattr(f, "address", None)  # numba.cfunc
    return address if isinstance(address, int) else None


def sample(logp_and_grad: Callable | Any, init, method: str = "nuts", *, data: int | None = None, progress: bool = True,
           **options) -> SampleResult:
    """Runs uqnn's sampler ``method`` on a log density.

    logp_and_grad: a Python callable x -> (log p(x), gradient), or a C function
        ``int f(size_t n, const double* x, double* grad, double* lp, void* data)`` (returning 0, or
        non-zero for a point outside the support) as a ctypes function pointer or a numba cfunc;
        ``data`` is then passed as its last argument. C callbacks run without the GIL, in parallel
        across chains; Python callables take the GIL for each call.
    init: the starting point (dim,) of every chain, or one per chain (chains, dim).
    method: one of ``uqnn.sample`` 's methods (nuts, hmc, mala, amcmc, slice).
    options: the method's options as ``uqnn fit`` declares them, with underscores: chains=4,
        warmup=1000, draws=1000, thin=1, seed=0, threads=0, and the method's own (max_depth,
        target_accept, metric, step_size, ...). An unknown or invalid option raises ValueError.

    progress: a tqdm bar when tqdm is installed (log lines through ``logging`` otherwise).

    Ctrl-C stops every chain after its current iteration and raises ``uqnn.Interrupted`` (a
    KeyboardInterrupt) whose ``result`` holds the draws made so far.
    """
    x0 = np.ascontiguousarray(init, dtype=np.float64)
    address = _callback_address(logp_and_grad)
    if address is not None:
        out, interrupted = _core.sample_callback(address, int(data or 0), x0, method, options, Reporter(progress))
    elif callable(logp_and_grad):
        if data is not None:
            raise ValueError("data: only a C callback takes a data pointer")
        out, interrupted = _core.sample_python(logp_and_grad, x0, method, options, Reporter(progress))
    else:
        raise ValueError("logp_and_grad must be a callable returning (value, gradient), a ctypes function pointer or a numba cfunc")
    dim = out["draws"].shape[2]
    result = SampleResult(out["draws"], out["sample_stats"], out["settings"], out["seconds"], interrupted,
                          [f"x[{k}]" for k in range(dim)])
    log.info("uqnn.sample %s: %d chains x %d draws in %.2f s", method, result.draws.shape[0], result.draws.shape[1], result.seconds)
    if interrupted:
        raise Interrupted(result)
    return result
