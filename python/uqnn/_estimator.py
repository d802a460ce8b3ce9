"""uqnn.BNN: a Bayesian neural network estimator in scikit-learn style over uqnn's fit service."""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from typing import Any, Sequence

import numpy as np

from . import _core
from ._common import Interrupted, Reporter, log, option_doc, summary_frame


def method_names() -> list[str]:
    """Every ``--method`` of ``uqnn fit``; each is a valid ``BNN(method=...)``."""
    return list(_core.method_names())


def _as_table(a, default_prefix: str) -> tuple[np.ndarray, list[str]]:
    """NumPy array, pandas DataFrame or Series -> (C-contiguous float64 (n, d), column names).
    Copies only when the input is not already C-contiguous float64."""
    names = None
    if hasattr(a, "columns"):  # DataFrame
        names = [str(c) for c in a.columns]
        a = a.to_numpy()
    elif hasattr(a, "to_numpy"):  # Series
        names = [str(a.name) if a.name is not None else default_prefix]
        a = a.to_numpy()
    arr = np.asarray(a)
    if arr.ndim == 1:
        arr = arr.reshape(-1, 1)
    if arr.ndim != 2:
        raise ValueError(f"{default_prefix}: expected a 1-D or 2-D array, got shape {arr.shape}")
    arr = np.ascontiguousarray(arr, dtype=np.float64)
    if names is None:
        names = [default_prefix] if arr.shape[1] == 1 and default_prefix == "y" else [f"{default_prefix}{j}" for j in range(arr.shape[1])]
    return arr, names


SHRINKAGE_PRIORS = ("horseshoe", "regularized-horseshoe", "ard")


class BNN:
    """A Bayesian neural network: a posterior (or its approximation) over the weights of an MLP.

    Parameters
    ----------
    hidden : widths of the hidden layers; () gives the Linear model.
    activation : tanh, relu, silu, sigmoid, sine or identity.
    likelihood : gaussian, heteroscedastic, bernoulli or categorical.
    noise : the Gaussian noise sd in y's units; None learns it.
    prior : gaussian, fan-in, mixture, laplace, flat, or the shrinkage priors horseshoe,
        regularized-horseshoe and ard (non-centred: ``draws`` hold standardised weights and log-scales,
        ``to_torch_state_dicts`` the weights themselves; options shrinkage_groups, horseshoe_global_scale,
        slab_scale, slab_df, ard_shape, ard_rate); prior_sigma its scale (the biases' sd for shrinkage).
    standardize : standardise X and y on the training rows (priors then act in standardised units).
    method : any method of ``uqnn fit`` (``uqnn.method_names()``): nuts, hmc, mala, amcmc, slice,
        mclmc, sgld, sghmc, psgld, fsgld, fsghmc, map, ens, rms, swag, vi, laplace, dropout, vi-hmc, dei-nuts,
        mile.
    seed : the same seed gives the same draws, whatever ``threads``.
    threads : threads for chains and members; 0 = automatic.
    progress : a progress bar (tqdm when installed; log lines through ``logging`` otherwise). Messages
        and warnings always go to the ``logging`` logger "uqnn".
    out : directory for the run's files (model.json, draws.csv, ...); default: a temporary one.
    **method_options : any option of ``uqnn fit`` with underscores for dashes (chains, warmup, draws,
        ens_members, laplace_curvature, epochs, lr, ...): see ``BNN.options(method)``. An unknown
        option, or a value outside its valid range, raises ValueError naming it.

    After ``fit``: ``draws`` (chains, draws, K), ``param_names``, ``predict``, ``predict_interval``,
    ``sample_predictive``, ``diagnostics()``, ``metrics(X, y)``, ``to_inference_data()``, ``save``.
    """

    def __init__(self, hidden: Sequence[int] = (50,), activation: str = "relu", likelihood: str = "gaussian",
                 noise: float | None = None, prior: str = "gaussian", prior_sigma: float = 1.0, standardize: bool = True,
                 method: str = "nuts", seed: int = 0, threads: int = 0, progress: bool = True, out: str | os.PathLike | None = None,
                 **method_options: Any):
        self.hidden = tuple(int(h) for h in hidden)
        self.activation, self.likelihood, self.noise = activation, likelihood, noise
        self.prior, self.prior_sigma, self.standardize = prior, prior_sigma, standardize
        self.method, self.seed, self.threads, self.progress, self.out = method, seed, threads, progress, out
        self.method_options = dict(method_options)
        self._fitted = None
        self._tmp = None
        self._start = None
        self.metrics_: dict | None = None
        _core.check_fit_options(self._options())  # ValueError now rather than at fit()

    @staticmethod
    def options(method: str = "nuts") -> str:
        """Every option a fit with ``method`` reads: name, default, valid values and meaning."""
        return option_doc(_core.fit_option_groups(method))

    def _options(self) -> dict:
        o = {"arch": list(self.hidden), "activation": self.activation, "likelihood": self.likelihood, "noise": self.noise,
             "prior": self.prior, "prior_sigma": self.prior_sigma, "standardize": self.standardize, "method": self.method,
             "seed": self.seed, "threads": self.threads, "quiet": not self.progress, "figure": "none"}
        o.update(self.method_options)
        return o

    # -- fitting ---------------------------------------------------------------------------------
    def fit(self, X, y, resume: bool = False) -> "BNN":
        """Fits the network to X (n, d) and y (n,) or (n, t): NumPy arrays or pandas frames/series,
        float32 or float64, C or Fortran order. Returns self.

        resume=True continues a chain run that was stopped (Ctrl-C, SIGTERM, a killed job) from the
        checkpoint in ``out``: same estimator settings and data, bitwise the draws of a run that was
        never stopped. Methods that run chains save it when stopped, and every
        ``checkpoint_every=N`` iterations (or ``"10m"``) when asked."""
        if resume and self.out is None:
            raise ValueError("resume=True needs the out directory of the stopped run (BNN(..., out=DIR))")
        x, input_names = _as_table(X, "x")
        t, target_names = _as_table(y, "y")
        options = self._options()
        if self.out is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="uqnn-")
            out = self._tmp.name
        else:
            out = os.fspath(self.out)
        options["out"] = out
        self._X_train, self._y_train = x, t
        start = None
        if self._start is not None and self.prior in SHRINKAGE_PRIORS:
            raise ValueError(f"prior {self.prior!r}: a torch network's weights cannot start the fit (its parameters are "
                             "standardised weights and their scales); use from_torch with prior 'gaussian' or 'fan-in'")
        if self._start is not None:
            # The user's network, then the likelihood's extras at uqnn's start (log sigma: 0.1 sd).
            ld = _core.FitProblem({k: v for k, v in options.items() if k not in ("out", "quiet")}, x, t, input_names, target_names)
            start = np.concatenate([self._start, ld.initial_point(0)[len(self._start):]])
        metrics, interrupted = _core.fit(options, x, t, input_names, target_names, start, Reporter(self.progress), resume)
        self.metrics_ = metrics
        self._fitted = _core.FittedModel.load(out)
        self._dir = out
        log.info("uqnn %s: %d parameters, %d draws, %.2f s", self.method, metrics["num_params"], metrics["num_draws"], metrics["seconds"])
        # Reasons not to trust the result (R-hat, ESS, divergences, ...), as the CLI prints them.
        for w in metrics.get("warnings", []):
            log.warning(w["message"])
        if interrupted or metrics.get("info", {}).get("interrupted"):
            raise Interrupted(self)
        return self

    @classmethod
    def from_torch(cls, module, method: str = "laplace", **kwargs) -> "BNN":
        """An estimator whose network is the user's ``torch.nn.Sequential`` (same architecture; its
        weights start the fit): see ``uqnn.from_torch``."""
        from ._torch import sequential_spec

        spec = sequential_spec(module)
        est = cls(hidden=spec["hidden"], activation=spec["activation"], method=method, **kwargs)
        est._start = spec["theta"]
        return est

    def acquisition(self, X, strategy: str = "bald") -> np.ndarray:
        """Active learning's score of each row of X: ``"bald"``, the mutual information between its
        label and the weights (Houlsby et al. 2011; the predictive mixture's entropy taken as a
        Gaussian's), or ``"max-variance"``, the epistemic variance. Label the highest first."""
        x, _ = _as_table(X, "x")
        return self._require_fit().acquisition(x, strategy)

    def to_torch_state_dicts(self) -> list:
        """The draws as PyTorch ``nn.Sequential`` state dicts (Linear layers at 0, 2, 4, ...)."""
        from ._torch import state_dicts

        f = self._require_fit()
        return state_dicts(f.network_weights, self.hidden, len(f.input_names), len(f.target_names))

    def _require_fit(self):
        if self._fitted is None:
            raise RuntimeError("this BNN is not fitted yet: call fit(X, y) or uqnn.load(dir)")
        return self._fitted

    # -- draws -----------------------------------------------------------------------------------
    @property
    def param_names(self) -> list[str]:
        """Names of the draws' columns: network weights (layer order) then likelihood extras."""
        return list(self._require_fit().param_names)

    @property
    def draws(self) -> np.ndarray:
        """Weight draws as (chains, draws, K): MCMC chains; methods without chains (ens, laplace,
        vi, ...) give a single chain of their members or samples (as posterior.nc holds them)."""
        f = self._require_fit()
        flat = f.draws  # chain after chain
        return flat.reshape(f.posterior_chains, -1, flat.shape[1])

    # -- predictions -----------------------------------------------------------------------------
    def _x(self, X):
        x, _ = _as_table(X, "x")
        return x

    @staticmethod
    def _squeeze(a):
        return a[:, 0] if a.ndim == 2 and a.shape[1] == 1 else a

    def predict(self, X, return_std: bool = False):
        """Posterior predictive mean at X (in y's units); with return_std also the total predictive
        sd (epistemic + noise). Classification: class probabilities."""
        p = self._require_fit().predict(self._x(X), [], self.seed)
        mean = self._squeeze(p["mean"])
        return (mean, self._squeeze(p["sd"])) if return_std else mean

    def predict_interval(self, X, level: float = 0.95):
        """Central predictive interval (lower, upper) at X, from samples of the predictive mixture."""
        if not 0 < level < 1:
            raise ValueError(f"level: {level} must be in (0, 1)")
        p = self._require_fit().predict(self._x(X), [float(level)], self.seed)
        lower, upper = p["intervals"][float(level)]
        return self._squeeze(lower), self._squeeze(upper)

    def sample_predictive(self, X, n: int = 1000, seed: int | None = None) -> np.ndarray:
        """n draws of y ~ p(y | X, data): (n, len(X)) for one target, (n, len(X), t) otherwise."""
        f = self._require_fit()
        rng = np.random.default_rng(self.seed if seed is None else seed)
        index = rng.integers(0, f.num_draws, size=int(n)).tolist()
        s = f.sample_predictive(self._x(X), index, int(rng.integers(0, 2**63)))
        return s[:, :, 0] if s.shape[2] == 1 else s

    def metrics(self, X, y) -> dict:
        """Regression: RMSE, NLL, LPPD (seed 003, eq. 7) and 50/90/95% coverage on (X, y), in y's
        units. Classification: accuracy, NLL (= -LPPD), Brier score and ECE (15 bins), as
        metrics.json of the CLI."""
        f = self._require_fit()
        t, _ = _as_table(y, "y")
        if self.likelihood in ("bernoulli", "categorical"):
            p = f.predict(self._x(X), [], self.seed)
            return _core.classification_metrics(p["mean"], t, self.likelihood == "categorical")
        ll = f.pointwise_log_likelihood(self._x(X), t)
        p = f.predict(self._x(X), [0.5, 0.9, 0.95], self.seed)
        err = p["mean"] - t
        m = {"n": int(t.shape[0]), "rmse": float(np.sqrt(np.mean(err**2)))}
        var = p["sd"] ** 2
        m["nll"] = float(np.mean(0.5 * np.log(2 * np.pi * var) + 0.5 * err**2 / var))
        top = ll.max(axis=0)
        m["lppd"] = float(np.mean(top + np.log(np.mean(np.exp(ll - top), axis=0))))
        for level, (lo, hi) in p["intervals"].items():
            m[f"coverage_{round(100 * level)}"] = float(np.mean((t >= lo) & (t <= hi)))
        return m

    def diagnostics(self):
        """ArviZ's summary (mean, sd, hdi_3%, hdi_97%, mcse_mean, mcse_sd, ess_bulk, ess_tail, r_hat)
        per parameter, as a pandas DataFrame computed by uqnn's C++ diagnostics."""
        return summary_frame(self.draws, self.param_names)

    def to_inference_data(self, X=None, y=None):
        """An ``arviz.InferenceData``: posterior (chain, draw, param), sample_stats (MCMC methods),
        and, on the training data or the given (X, y): observed_data, log_likelihood (pointwise,
        for az.loo / az.compare) and posterior_predictive (one draw of y per posterior draw)."""
        from ._arviz import to_inference_data

        return to_inference_data(self, X, y)

    # -- files -----------------------------------------------------------------------------------
    def save(self, path: str | os.PathLike) -> None:
        """Writes the run's files (model.json, draws.csv, metrics.json, ...: what ``uqnn fit`` writes)
        into ``path``; ``uqnn.load(path)`` and ``uqnn predict --model path`` read them."""
        self._require_fit()
        os.makedirs(path, exist_ok=True)
        if os.path.abspath(path) != os.path.abspath(self._dir):
            shutil.copytree(self._dir, path, dirs_exist_ok=True)

    def __repr__(self) -> str:
        state = "fitted" if self._fitted is not None else "not fitted"
        return f"uqnn.BNN(method={self.method!r}, hidden={self.hidden}, activation={self.activation!r}, {state})"


def load(path: str | os.PathLike) -> BNN:
    """A fitted BNN from a run directory written by ``uqnn fit`` or ``BNN.save``."""
    f = _core.FittedModel.load(os.fspath(path))
    settings = f.model_json.get("settings", {}).get("settings", {})
    est = BNN.__new__(BNN)
    est.hidden = tuple(settings.get("arch", ()))
    est.activation = settings.get("activation", "")
    est.likelihood = f.likelihood
    est.noise, est.prior = settings.get("noise"), settings.get("prior", "gaussian")
    est.prior_sigma, est.standardize = settings.get("prior_sigma", 1.0), settings.get("standardize", True)
    est.method, est.seed, est.threads = f.method, int(settings.get("seed", 0)), int(settings.get("threads", 0))
    est.progress, est.out, est.method_options = True, os.fspath(path), {}
    est._fitted, est._tmp, est._dir = f, None, os.fspath(path)
    metrics_path = os.path.join(path, "metrics.json")
    est.metrics_ = json.load(open(metrics_path)) if os.path.exists(metrics_path) else None
    return est


BNN.__doc__ += "\n    Options of the default method (nuts):\n" + option_doc(_core.fit_option_groups("nuts"))
