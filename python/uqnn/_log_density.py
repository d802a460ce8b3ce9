"""uqnn.LogDensity: a uqnn posterior's value and gradient, for other samplers (BlackJAX, emcee, ...)."""
from __future__ import annotations

import numpy as np

from . import _core
from ._estimator import BNN, _as_table


class LogDensity:
    """The log posterior of a BNN on (X, y), in the parameters ``uqnn fit`` samples (network weights
    in standardised units, then likelihood extras such as log sigma), with its gradient.

    ``LogDensity(X, y, hidden=..., activation=..., ..., **options)`` takes BNN's model, likelihood,
    prior and data options, with its defaults (those of ``uqnn fit``). ``ld(theta)`` returns
    (log p, gradient) — the signature
    ``uqnn.sample`` takes; ``ld.logp(theta)`` only the value. ``dim``, ``param_names`` and
    ``initial_point(seed)`` (the network initialisation uqnn's chains start from) describe it.
    """

    def __init__(self, X, y, **options):
        x, input_names = _as_table(X, "x")
        t, target_names = _as_table(y, "y")
        opts = BNN(**options)._options()
        opts.pop("quiet", None)
        self._problem = _core.FitProblem(opts, x, t, input_names, target_names)
        self.dim: int = self._problem.dim
        self.param_names: list[str] = list(self._problem.param_names)

    def __call__(self, theta) -> tuple[float, np.ndarray]:
        return self._problem.logp_and_grad(np.ascontiguousarray(theta, dtype=np.float64))

    def logp(self, theta) -> float:
        return self(theta)[0]

    def initial_point(self, seed: int = 0) -> np.ndarray:
        return self._problem.initial_point(seed)
