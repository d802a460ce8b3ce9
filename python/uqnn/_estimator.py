"""uqnn.BNN, uqnn.BNNRegressor, uqnn.BNNClassifier: Bayesian neural network estimators following
scikit-learn's API over uqnn's fit service."""
from __future__ import annotations

import json
import os
import shutil
import tempfile
import warnings
from typing import Any, Sequence

import numpy as np

from . import _core
from ._common import Interrupted, Reporter, log, option_doc, summary_frame
from ._sklearn_compat import BaseEstimator, ClassifierMixin, DataConversionWarning, NotFittedError, RegressorMixin


_VOCABULARY_JSON = _core.vocabulary()  # the registries are fixed once the module is loaded


def vocabulary() -> dict[str, list[dict]]:
    """Every closed set of names uqnn knows, by kind ("method", "model", "activation", "init",
    "likelihood", "prior", "optimizer", "lr_schedule", "bandit_agent"): for each entry its name, a
    summary and what it says about itself (a method's family, whether it fits class labels, ...)."""
    return json.loads(_VOCABULARY_JSON)


def names_of(kind: str) -> list[str]:
    """The names of one closed set of ``vocabulary()``, e.g. ``names_of("prior")``."""
    return [entry["name"] for entry in vocabulary()[kind]]


def method_names() -> list[str]:
    """Every ``--method`` of ``uqnn fit``; each is a valid ``BNN(method=...)``."""
    return names_of("method")


def _is_sparse(a) -> bool:
    return type(a).__module__.startswith("scipy.sparse")


def _as_table(a, default_prefix: str, what: str | None = None, require_2d: bool = False) -> tuple[np.ndarray, list[str]]:
    """NumPy array, pandas DataFrame or Series -> (C-contiguous float64 (n, d), column names).
    Copies only when the input is not already C-contiguous float64. Refuses what a fit cannot use
    (sparse, complex, empty, NaN or inf), naming the row and column of a non-finite value.
    require_2d: a 1-D array is an error (scikit-learn's rule) rather than one column."""
    what = what or default_prefix.upper()
    if a is None:
        raise ValueError(f"{what} is None" if what != "y" else "this estimator requires y to be passed, but the target y is None")
    if _is_sparse(a):
        raise TypeError(f"{what}: sparse input is not supported; pass a dense array (e.g. {what}.toarray())")
    names = None
    if hasattr(a, "columns"):  # DataFrame
        names = [str(c) for c in a.columns]
        a = a.to_numpy()
    elif hasattr(a, "to_numpy"):  # Series
        names = [str(a.name) if a.name is not None else default_prefix]
        a = a.to_numpy()
    arr = np.asarray(a)
    if np.iscomplexobj(arr):
        raise ValueError(f"{what}: Complex data not supported")
    if arr.ndim == 1:
        if require_2d:
            raise ValueError(f"{what}: expected a 2D array, got a 1D array instead. Reshape your data with "
                             f"{what}.reshape(-1, 1) for a single feature or {what}.reshape(1, -1) for a single sample")
        arr = arr.reshape(-1, 1)
    if arr.ndim != 2:
        raise ValueError(f"{what}: expected a 1-D or 2-D array, got shape {arr.shape}")
    arr = np.ascontiguousarray(arr, dtype=np.float64)
    if arr.shape[0] == 0:
        raise ValueError(f"{what}: found array with 0 sample(s) (shape={arr.shape}) while a minimum of 1 is required")
    if arr.shape[1] == 0:
        raise ValueError(f"{what}: 0 feature(s) (shape={arr.shape}) while a minimum of 1 is required.")
    if names is None:
        names = [default_prefix] if arr.shape[1] == 1 and default_prefix == "y" else [f"{default_prefix}{j}" for j in range(arr.shape[1])]
    _check_finite(arr, what, names)
    return arr, names


def _check_finite(arr: np.ndarray, what: str, names: list[str]) -> None:
    """ValueError naming the first NaN or inf of arr (row and column, 0-based) and how many there are."""
    bad = ~np.isfinite(arr)
    if not bad.any():
        return
    i, j = (int(k) for k in np.argwhere(bad)[0])
    v = arr[i, j]
    kind = "NaN" if np.isnan(v) else ("inf" if v > 0 else "-inf")
    more = int(bad.sum()) - 1
    raise ValueError(f"{what} contains {kind} at row {i}, column {j} ({names[j]!r})"
                     + (f", and {more} more NaN or inf value(s)" if more else "")
                     + ": uqnn does not impute missing values; drop or impute them first")


def _declared_defaults() -> dict[str, Any]:
    """Each option's default as C++ declares it (the one declaration the CLI, TOML files and
    model.json also read), for a fit with the default method."""
    method = next(o["default"] for g in _core.all_option_groups() for o in g["options"] if o["name"] == "method")
    return {o["name"]: o["default"] for g in _core.fit_option_groups(method) for o in g["options"]}


_DEFAULTS = _declared_defaults()
# The estimators' keyword defaults, read from the declarations (``arch`` is ``hidden`` here, a tuple).
DEFAULT_HIDDEN: tuple = tuple(_DEFAULTS["arch"])
DEFAULT_ACTIVATION: str = _DEFAULTS["activation"]
DEFAULT_LIKELIHOOD: str = _DEFAULTS["likelihood"]
DEFAULT_NOISE = _DEFAULTS["noise"]
DEFAULT_PRIOR: str = _DEFAULTS["prior"]
DEFAULT_PRIOR_SIGMA: float = _DEFAULTS["prior_sigma"]
DEFAULT_STANDARDIZE: bool = _DEFAULTS["standardize"]
DEFAULT_METHOD: str = _DEFAULTS["method"]
DEFAULT_SEED: int = _DEFAULTS["seed"]
DEFAULT_THREADS: int = _DEFAULTS["threads"]
DEFAULT_PROGRESS: bool = not _DEFAULTS["quiet"]

SHRINKAGE_PRIORS = tuple(e["name"] for e in vocabulary()["prior"] if e["shrinkage"])


def _store(est, params: dict) -> None:
    """__init__'s parameters stored unchanged (scikit-learn's rule); keywords beyond them are
    method options (``BNN(ens_members=5)``), kept in ``method_options``."""
    extra = params.pop("options")
    params.pop("self")
    params.pop("__class__", None)
    for name, value in params.items():
        setattr(est, name, value)
    if extra:
        est.method_options = {**(est.method_options or {}), **extra}


class BNN(BaseEstimator):
    """A Bayesian neural network: a posterior (or its approximation) over the weights of an MLP.

    Every default is the one ``uqnn fit`` has (read from the same option declarations).

    Parameters
    ----------
    hidden : widths of the hidden layers (the CLI's ``--arch``); () gives the Linear model.
    activation : {activations}.
    likelihood : {likelihoods}.
    noise : the Gaussian noise sd in y's units; None learns it.
    prior : {plain_priors}, or the shrinkage priors {shrinkage_priors}
        (non-centred: ``draws`` hold standardised weights and log-scales,
        ``to_torch_state_dicts`` the weights themselves; options shrinkage_groups, horseshoe_global_scale,
        slab_scale, slab_df, ard_shape, ard_rate); prior_sigma its scale (the biases' sd for shrinkage).
    standardize : standardise X and y on the training rows (priors then act in standardised units).
    method : any method of ``uqnn fit`` (``uqnn.method_names()``, ``uqnn.vocabulary()["method"]``):
        {methods}.
    seed : the same seed gives the same draws, whatever ``threads``.
    threads : threads for chains and members; 0 = automatic.
    progress : a progress bar (tqdm when installed; log lines through ``logging`` otherwise). Messages
        and warnings always go to the ``logging`` logger "uqnn".
    out : directory for the run's files (model.json, draws.csv, ...); default: a temporary one.
    method_options : dict of any other option of ``uqnn fit`` with underscores for dashes (chains,
        warmup, draws, ens_members, laplace_curvature, epochs, lr, ...): see ``BNN.options(method)``.
        They may also be given as keywords, ``BNN(method="ens", ens_members=5)``, or to
        ``set_params``; they are then kept in ``method_options``. An unknown option, or a value
        outside its valid range, raises ValueError naming it, at ``fit``.

    After ``fit``: ``draws`` (chains, draws, K), ``param_names``, ``predict``, ``predict_interval``,
    ``predict_conformal`` (with ``conformal=...``), ``sample_predictive``, ``diagnostics()``, ``metrics(X, y)``, ``to_inference_data()``, ``save``;
    ``n_features_in_``, ``feature_names_in_`` (frames with string column names) and ``metrics_``.
    ``uqnn.BNNRegressor`` and ``uqnn.BNNClassifier`` are its scikit-learn regressor and classifier.
    """

    # A 1-D X is one column here (documented); the scikit-learn estimators refuse it, as scikit-learn does.
    _require_2d = False

    def __init__(self, hidden: Sequence[int] = DEFAULT_HIDDEN, activation: str = DEFAULT_ACTIVATION,
                 likelihood: str = DEFAULT_LIKELIHOOD, noise: float | None = DEFAULT_NOISE, prior: str = DEFAULT_PRIOR,
                 prior_sigma: float = DEFAULT_PRIOR_SIGMA, standardize: bool = DEFAULT_STANDARDIZE,
                 method: str = DEFAULT_METHOD, seed: int = DEFAULT_SEED, threads: int = DEFAULT_THREADS,
                 progress: bool = DEFAULT_PROGRESS, out: str | os.PathLike | None = None,
                 method_options: dict | None = None, **options: Any):
        _store(self, locals())

    def set_params(self, **params):
        """Sets parameters; a name that is not one (``ens_members=5``) is a method option and goes
        into ``method_options`` (so ``GridSearchCV(param_grid={"epochs": [...]})`` works)."""
        valid = self.get_params(deep=False)
        extra = {k: params.pop(k) for k in list(params) if k not in valid and "__" not in k}
        if extra:
            self.method_options = {**(self.method_options or {}), **extra}
        return super().set_params(**params)

    @staticmethod
    def options(method: str = DEFAULT_METHOD) -> str:
        """Every option a fit with ``method`` reads: name, default, valid values and meaning."""
        return option_doc(_core.fit_option_groups(method))

    def _likelihood_options(self) -> dict:
        return {"likelihood": self.likelihood, "noise": self.noise}

    def _options(self) -> dict:
        """The fit's options as ``uqnn fit`` names them; the C++ side checks them."""
        hidden = self.hidden  # the C++ side checks the widths (2.5 is an error, not 2)
        o = {"arch": list(hidden) if isinstance(hidden, (list, tuple, np.ndarray)) else hidden,
             "activation": self.activation, **self._likelihood_options(), "prior": self.prior,
             "prior_sigma": self.prior_sigma, "standardize": self.standardize, "method": self.method, "seed": self.seed,
             "threads": self.threads, "quiet": not self.progress, "figure": "none"}
        if self.method_options is not None:
            if not isinstance(self.method_options, dict):
                raise ValueError(f"method_options: expected a dict of option names to values, got {type(self.method_options).__name__}")
            o.update(self.method_options)
        return o

    # -- fitting ---------------------------------------------------------------------------------
    def _fit_targets(self, y) -> tuple[np.ndarray, list[str], dict]:
        """y as the fit's target table, its names, and options the targets decide (classes)."""
        t, names = _as_table(y, "y", what="y")
        return t, names, {}

    def fit(self, X, y, resume: bool = False, ood_X=None) -> "BNN":
        """Fits the network to X (n, d) and y (n,) or (n, t): NumPy arrays or pandas frames/series,
        float32 or float64, C or Fortran order. Returns self. NaN or inf in X or y raise ValueError
        naming the row and column (uqnn does not impute).

        resume=True continues a chain run that was stopped (Ctrl-C, SIGTERM, a killed job) from the
        checkpoint in ``out``: same estimator settings and data, bitwise the draws of a run that was
        never stopped. Methods that run chains save it when stopped, and every
        ``checkpoint_every=N`` iterations (or ``"10m"``) when asked.

        ood_X (classifiers): out-of-distribution inputs, (m, d) like X. ``metrics_["ood"]`` then has
        AUROC, AUPR and FPR at 95% TPR of the predictive entropy, mutual information and max
        probability, the test rows (else the training rows) against these, as ``uqnn fit
        --ood-data`` writes them into metrics.json."""
        if resume and self.out is None:
            raise ValueError("resume=True needs the out directory of the stopped run (BNN(..., out=DIR))")
        feature_names = _feature_names(X)
        torch_setup = self._torch_setup()  # (module, input_shape, subset, last_layer) or None
        if torch_setup is not None:
            X, example_shape = _examples_as_rows(X)
            feature_names = None
            if torch_setup["input_shape"] is None:
                torch_setup["input_shape"] = example_shape
        if torch_setup is not None and torch_setup["last_layer"] is not None:
            head = torch_setup["last_layer"]
            head.set_input_shape(torch_setup["input_shape"])
            self._raw_features = _as_table(X, "x", what="X")[0].shape[1]
            X = head.features(_as_table(X, "x", what="X")[0])
        x, input_names = _as_table(X, "x", what="X", require_2d=self._require_2d)
        t, target_names, target_options = self._fit_targets(y)
        if t.shape[0] != x.shape[0]:
            raise ValueError(f"X has {x.shape[0]} rows but y has {t.shape[0]}: they must have the same number of samples")
        if x.shape[0] < 2:
            raise ValueError(f"n_samples = {x.shape[0]}: a fit needs at least 2 rows (standardising needs a spread)")
        options = {**self._options(), **target_options}
        if self.out is None:
            tmp = tempfile.TemporaryDirectory(prefix="uqnn-")
            out = tmp.name
        else:
            tmp, out = None, os.fspath(self.out)
        options["out"] = out
        start = None
        given_start = getattr(self, "_start", None)
        network_id, network = None, None
        if torch_setup is not None and torch_setup["last_layer"] is not None:
            given_start = torch_setup["last_layer"].head_theta()
        elif torch_setup is not None:
            from ._torch_model import TorchNetwork

            network = TorchNetwork(torch_setup["module"], torch_setup["input_shape"], torch_setup["subset"])
            if network.input_dim != x.shape[1]:
                raise ValueError(f"X has {x.shape[1]} values per example; the module takes input_shape {network.input_shape} "
                                 f"({network.input_dim} values)")
            _core.register_network(network, torch_setup.get("init_options"))
            network_id = network.id
            # The network is the module: the fit's own network options only size the memory estimate,
            # and for a module uqnn can also translate they are its translation's (same starts).
            options.update(torch_setup.get("init_options") or {"arch": []})
            given_start = network.initial
        if given_start is not None and self.prior in SHRINKAGE_PRIORS:
            raise ValueError(f"prior {self.prior!r}: a torch network's weights cannot start the fit (its parameters are "
                             "standardised weights and their scales); use from_torch with prior 'gaussian' or 'fan-in'")
        if given_start is not None:
            # The user's network, then the likelihood's extras at uqnn's start (log sigma: 0.1 sd).
            ld = _core.FitProblem({k: v for k, v in options.items() if k not in ("out", "quiet")}, x, t, input_names, target_names)
            start = np.concatenate([given_start, ld.initial_point(0)[ld.num_network_params:]])
        ood = None
        if ood_X is not None:
            ood, _ = _as_table(ood_X, "x", what="ood_X", require_2d=self._require_2d)
            if ood.shape[1] != x.shape[1]:
                raise ValueError(f"ood_X has {ood.shape[1]} columns, X has {x.shape[1]}: they must have the same features")
        metrics, interrupted = _core.fit(options, x, t, input_names, target_names, start, Reporter(self.progress), resume,
                                         ood_X=ood, network_id=network_id)
        if network is not None:
            network.save(out)  # beside model.json: uqnn.load and pickling read the run back with it
        if torch_setup is not None and torch_setup["last_layer"] is not None:
            torch_setup["last_layer"].save(out)
        self._torch_network = network
        # Fitted state only once the fit has run (scikit-learn's check_is_fitted looks for these).
        self._tmp, self._dir = tmp, out
        self._X_train, self._y_train = x, t
        self._fitted = _core.FittedModel.load(out)
        self.metrics_ = metrics
        self.n_features_in_ = x.shape[1]
        if feature_names is not None:
            self.feature_names_in_ = feature_names
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        log.info("uqnn %s: %d parameters, %d draws, %.2f s", self.method, metrics["num_params"], metrics["num_draws"], metrics["seconds"])
        # Reasons not to trust the result (R-hat, ESS, divergences, ...), as the CLI prints them.
        for w in metrics.get("warnings", []):
            log.warning(w["message"])
        if interrupted or metrics.get("info", {}).get("interrupted"):
            raise Interrupted(self)
        return self

    @classmethod
    def from_torch(cls, module, method: str = "laplace", input_shape=None, subset=None, backend: str = "auto", **kwargs) -> "BNN":
        """An estimator whose network is the user's PyTorch network (same architecture; its weights
        start the fit): see ``uqnn.from_torch``. A convolutional network needs ``input_shape=(C, H, W)``
        and a layer list that builds it (docs/networks.md); ``to_torch_state_dicts`` then gives state
        dicts with the module's own keys.

        Any other ``nn.Module`` (a transformer, custom layers, ...) runs through PyTorch: uqnn's
        methods drive it through its log likelihood and gradients over the flat parameter vector
        (``uqnn.TorchModel``; docs/bring-your-own-model.md). ``backend="torch"`` asks for that
        even when uqnn could translate the module, ``backend="native"`` refuses it otherwise.

        ``subset="last-layer"``: a Bayesian last layer on the frozen network. The features of the
        module's last ``nn.Linear`` are computed once (by PyTorch, at fit and at predict), and uqnn's
        own methods, NUTS included, run on that layer alone. ``subset=[names]``: only those
        parameters are fitted (through PyTorch), the others stay as they are.

        With the PyTorch backend or a last layer, ``standardize`` defaults to False: the module's
        weights were trained on the data as they are."""
        from ._torch import cnn_layer_list, from_torch

        if backend not in ("auto", "native", "torch"):
            raise ValueError(f"backend: {backend!r} is not one of 'auto', 'native', 'torch'")
        if subset is not None:
            if backend == "native":
                raise ValueError("subset: a last layer or subnetwork runs on the module through PyTorch, not on uqnn's translation")
            kwargs.setdefault("standardize", False)
            est = cls(method=method, **kwargs)
            if isinstance(subset, str):
                if subset != "last-layer":
                    raise ValueError(f"subset: {subset!r} is not 'last-layer' or a list of parameter names")
                from ._torch_model import LastLayer

                est._torch = {"module": module, "input_shape": input_shape, "subset": None, "last_layer": LastLayer(module)}
                est.hidden, est.activation = (), "identity"
            else:
                est._torch = {"module": module, "input_shape": input_shape, "subset": list(subset), "last_layer": None}
            return est
        if backend == "torch":
            return cls._torch_backed(module, method, input_shape, **kwargs)
        try:
            spec = from_torch(module, input_shape)
            if spec.get("model") == "cnn":
                cnn_layer_list(spec)
        except ValueError as e:
            if backend == "native":
                raise
            from ._common import log

            log.info("uqnn: %s; the module runs through PyTorch", str(e).split(";")[0])
            return cls._torch_backed(module, method, input_shape, **kwargs)
        if spec.get("model") == "cnn":
            layers, activation = cnn_layer_list(spec)
            est = cls(activation=activation, method=method, model="cnn", layers=layers, input_shape=list(spec["input_shape"]),
                      **kwargs)
            est._torch_names = [b[0] for b in _core.Model(spec["description"]).param_blocks]
            est._torch_shapes = spec["shapes"]
        else:
            est = cls(hidden=spec["hidden"], activation=spec["activation"], method=method, **kwargs)
        est._start = spec["theta"]
        return est

    @classmethod
    def _torch_backed(cls, module, method, input_shape, **kwargs) -> "BNN":
        kwargs.setdefault("standardize", False)
        est = cls(method=method, **kwargs)
        est._torch = {"module": module, "input_shape": input_shape, "subset": None, "last_layer": None}
        try:  # a module uqnn can also translate starts where the translated network would (same seed, same starts)
            from ._torch import sequential_spec

            spec = sequential_spec(module)
            est._torch["init_options"] = {"arch": list(spec["hidden"]), "activation": spec["activation"]}
        except (ValueError, TypeError):
            pass
        return est

    def _torch_setup(self):
        """How the fit uses a PyTorch module (BNN.from_torch, TorchModel), or None for uqnn's own networks."""
        setup = getattr(self, "_torch", None)
        return None if setup is None else dict(setup)

    def acquisition(self, X, strategy: str = "bald") -> np.ndarray:
        """Active learning's score of each row of X: ``"bald"``, the mutual information between its
        label and the weights (Houlsby et al. 2011; the predictive mixture's entropy taken as a
        Gaussian's), or ``"max-variance"``, the epistemic variance. Label the highest first."""
        f = self._require_fit()
        return f.acquisition(self._x(X), strategy)

    def to_torch_state_dicts(self) -> list:
        """The draws as PyTorch state dicts: ``nn.Sequential`` ones (Linear layers at 0, 2, 4, ...)
        for an MLP; for a cnn, keyed by its parameter blocks (conv1.weight, ...), or by the module's
        own keys when the estimator came from ``from_torch``."""
        from ._torch import cnn_state_dicts, state_dicts

        f = self._require_fit()
        setup = self._torch_setup()
        if setup is not None and setup["last_layer"] is not None:
            return [setup["last_layer"].state_dict(theta) for theta in f.network_weights]
        if getattr(self, "_torch_network", None) is not None:
            return [self._torch_network.state_dict(theta) for theta in f.network_weights]
        model = f.model_json["model"]
        model = model.get("network", model) if model.get("kind") == "non_centred" else model
        if model.get("kind") == "cnn":
            return cnn_state_dicts(f.network_weights, model, getattr(self, "_torch_shapes", None), getattr(self, "_torch_names", None))
        return state_dicts(f.network_weights, tuple(self.hidden), len(f.input_names), len(f.target_names))

    def __sklearn_is_fitted__(self) -> bool:
        return getattr(self, "_fitted", None) is not None

    def _require_fit(self):
        if getattr(self, "_fitted", None) is None:
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet: call fit(X, y) or uqnn.load(dir)")
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
        directory = getattr(self, "_dir", None)
        if directory and f.model_json.get("draws_file") == "draws.npy" and os.path.exists(os.path.join(directory, "draws.npy")):
            # A large model's draws (--draws-format npy): mapped from the file, read only, not copied.
            flat = np.load(os.path.join(directory, "draws.npy"), mmap_mode="r")
        else:
            flat = f.draws  # chain after chain
        return flat.reshape(f.posterior_chains, -1, flat.shape[1])

    # -- predictions -----------------------------------------------------------------------------
    def _x(self, X) -> np.ndarray:
        """X for predictions: the fit's number of columns (and names, when fitted with names), finite."""
        setup = self._torch_setup()
        if setup is not None:
            X, _ = _examples_as_rows(X)
            if setup["last_layer"] is not None:
                x, _ = _as_table(X, "x", what="X")
                raw = getattr(self, "_raw_features", None)
                if raw is not None and x.shape[1] != raw:
                    raise ValueError(f"X has {x.shape[1]} values per example, but {type(self).__name__} is expecting {raw}")
                X = setup["last_layer"].features(x)
        names = _feature_names(X)
        fitted_names = getattr(self, "feature_names_in_", None)
        if fitted_names is not None and names is not None and list(names) != list(fitted_names):
            raise ValueError(_feature_names_mismatch(list(fitted_names), list(names)))
        if fitted_names is not None and names is None:
            warnings.warn(f"X does not have valid feature names, but {type(self).__name__} was fitted with feature names", UserWarning,
                          stacklevel=3)
        elif fitted_names is None and names is not None and hasattr(self, "n_features_in_") and getattr(self, "_X_train", None) is not None:
            warnings.warn(f"X has feature names, but {type(self).__name__} was fitted without feature names", UserWarning,
                          stacklevel=3)
        x, _ = _as_table(X, "x", what="X", require_2d=self._require_2d)
        expected = getattr(self, "n_features_in_", None)
        if expected is not None and x.shape[1] != expected:
            raise ValueError(f"X has {x.shape[1]} features, but {type(self).__name__} is expecting {expected} features as input.")
        return x

    @staticmethod
    def _squeeze(a):
        return a[:, 0] if a.ndim == 2 and a.shape[1] == 1 else a

    def predict(self, X, return_std: bool = False):
        """Posterior predictive mean at X (in y's units); with return_std also the total predictive
        sd (epistemic + noise). Classification: class probabilities. NaN or inf in X raise
        ValueError naming the row and column."""
        f = self._require_fit()
        p = f.predict(self._x(X), [], self.seed)
        mean = self._squeeze(p["mean"])
        return (mean, self._squeeze(p["sd"])) if return_std else mean

    def predict_interval(self, X, level: float = 0.95):
        """Central predictive interval (lower, upper) at X, from samples of the predictive mixture."""
        if not 0 < level < 1:
            raise ValueError(f"level: {level} must be in (0, 1)")
        f = self._require_fit()
        p = f.predict(self._x(X), [float(level)], self.seed)
        lower, upper = p["intervals"][float(level)]
        return self._squeeze(lower), self._squeeze(upper)

    def predict_conformal(self, X):
        """The conformal prediction of a fit calibrated with ``conformal=...`` (and
        ``calibration_fraction=`` or ``calibration_indices=``; cv+ and jackknife+ need none): regression
        (lower, upper) at the ``confidence_level`` (split: mean +- q sd, Lei et al. 2018; cqr: the
        method's interval widened by q, Romano et al. 2019; cv+ / jackknife+ for ens and rms: the
        members' out-of-fold residuals, Barber et al. 2021); classification with aps / raps a boolean (n, classes) array of the
        prediction sets (Romano et al. 2020; Angelopoulos et al. 2021), with temperature the
        temperature-scaled class probabilities (Guo et al. 2017). ValueError for a fit that was not
        calibrated."""
        f = self._require_fit()
        c = f.conformal(self._x(X), self.seed)
        if c is None:
            raise ValueError("this fit was not calibrated: fit with conformal='split' (or cqr, aps, raps, temperature; cv+ "
                             "or jackknife+ for ens and rms, without calibration rows) "
                             "and calibration_fraction=0.2 (or calibration_indices=FILE)")
        if "lower" in c:
            return self._squeeze(c["lower"]), self._squeeze(c["upper"])
        if "sets" in c:
            return c["sets"].astype(bool)
        return c["probabilities"]

    def sample_predictive(self, X, n: int = 1000, seed: int | None = None) -> np.ndarray:
        """n draws of y ~ p(y | X, data): (n, len(X)) for one target, (n, len(X), t) otherwise."""
        f = self._require_fit()
        rng = np.random.default_rng(self.seed if seed is None else seed)
        index = rng.integers(0, f.num_draws, size=int(n)).tolist()
        s = f.sample_predictive(self._x(X), index, int(rng.integers(0, 2**63)))
        return s[:, :, 0] if s.shape[2] == 1 else s

    def _targets(self, y) -> np.ndarray:
        """y as the fitted model's targets (a classifier's labels become class indices)."""
        t, _ = _as_table(y, "y", what="y")
        return t

    def metrics(self, X, y, ood_X=None) -> dict:
        """Regression: RMSE, NLL, LPPD (Sommer et al. 2024, eq. 7) and 50/90/95% coverage on (X, y), in y's
        units. Classification: accuracy, NLL (= -LPPD), Brier score and ECE (15 bins), as
        metrics.json of the CLI; with ``ood_X`` (out-of-distribution inputs) also ``"ood"``: AUROC,
        AUPR and FPR at 95% TPR of the predictive entropy, mutual information and max probability,
        X's rows against ood_X's."""
        f = self._require_fit()
        x, t = self._x(X), self._targets(y)
        if ood_X is not None and f.likelihood not in ("bernoulli", "categorical"):
            raise ValueError("ood_X: the detection scores are of class probabilities; this is a regression fit "
                             "(uqnn.evaluate(model, X, y, ood_X=...) scores a regression's predictive sd)")
        if f.likelihood in ("bernoulli", "categorical"):
            p = f.predict(x, [], self.seed)
            m = _core.classification_metrics(p["mean"], t, f.likelihood == "categorical")
            if ood_X is not None:
                m["ood"] = f.ood_metrics(x, self._x(ood_X))
            return m
        ll = f.pointwise_log_likelihood(x, t)
        p = f.predict(x, [0.5, 0.9, 0.95], self.seed)
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
        for az.loo / az.compare) and posterior_predictive (one draw of y per posterior draw).
        Needs ArviZ (``pip install arviz``): ImportError saying so otherwise."""
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

    # -- pickling (joblib, GridSearchCV(n_jobs=...), copy.deepcopy) -------------------------------
    def __getstate__(self):
        """A fitted estimator pickles with its run's files (the compiled model is reloaded from them)."""
        state = super().__getstate__() if hasattr(super(), "__getstate__") else self.__dict__.copy()
        state = dict(state)
        state.pop("_fitted", None)
        state.pop("_tmp", None)
        if getattr(self, "_fitted", None) is not None:
            files = {}
            for root, _, names in os.walk(self._dir):
                for name in names:
                    full = os.path.join(root, name)
                    with open(full, "rb") as fh:
                        files[os.path.relpath(full, self._dir)] = fh.read()
            state["_run_files"] = files
        return state

    def __setstate__(self, state):
        state = dict(state)
        files = state.pop("_run_files", None)
        if hasattr(super(), "__setstate__"):
            super().__setstate__(state)
        else:
            self.__dict__.update(state)
        if files is not None:
            self._tmp = tempfile.TemporaryDirectory(prefix="uqnn-")
            for rel, data in files.items():
                full = os.path.join(self._tmp.name, rel)
                os.makedirs(os.path.dirname(full), exist_ok=True)
                with open(full, "wb") as fh:
                    fh.write(data)
            self._dir = self._tmp.name
            _restore_torch(self, self._dir)
            self._fitted = _core.FittedModel.load(self._dir)


def _feature_names_mismatch(fitted: list, given: list) -> str:
    """scikit-learn's message for a frame whose columns are not those of the fit."""
    def listed(title, names):
        return title + "\n" + "".join(f"- {n}\n" for n in names[:5]) + ("- ...\n" if len(names) > 5 else "")

    unseen = sorted(set(given) - set(fitted))
    missing = sorted(set(fitted) - set(given))
    msg = "The feature names should match those that were passed during fit.\n"
    if unseen:
        msg += listed("Feature names unseen at fit time:", unseen)
    if missing:
        msg += listed("Feature names seen at fit time, yet now missing:", missing)
    if not unseen and not missing:
        msg += "Feature names must be in the same order as they were in fit.\n"
    return msg


def _examples_as_rows(X):
    """X of shape (n, *example_shape) (images, token sequences) as (n, prod(example_shape)) rows,
    and the example shape; frames and 2-D arrays as they are."""
    if hasattr(X, "columns") or hasattr(X, "to_numpy") or _is_sparse(X):
        a = np.asarray(X.to_numpy() if hasattr(X, "to_numpy") else X)
        return X, tuple(a.shape[1:]) if a.ndim >= 2 else (1,)
    if hasattr(X, "detach"):  # a torch tensor
        X = X.detach().cpu().numpy()
    a = np.asarray(X)
    if a.ndim <= 2:
        return X, (a.shape[1],) if a.ndim == 2 else (1,)
    return a.reshape(a.shape[0], -1), tuple(a.shape[1:])


def _feature_names(X):
    """A frame's column names when all are strings (scikit-learn's feature_names_in_), else None."""
    columns = getattr(X, "columns", None)
    if columns is None:
        return None
    names = list(columns)
    if names and all(isinstance(c, str) for c in names):
        return np.asarray(names, dtype=object)
    return None



def _with_vocabulary(doc: str) -> str:
    """A docstring with its lists of names filled in from the registries (``vocabulary()``)."""
    v = vocabulary()
    names = {kind: [e["name"] for e in entries] for kind, entries in v.items()}
    words = {
        "{activations}": ", ".join(names["activation"]),
        "{likelihoods}": ", ".join(names["likelihood"]),
        "{plain_priors}": ", ".join(e["name"] for e in v["prior"] if not e["shrinkage"]),
        "{shrinkage_priors}": ", ".join(SHRINKAGE_PRIORS),
        "{methods}": ", ".join(names["method"]),
    }
    for placeholder, text in words.items():
        doc = doc.replace(placeholder, text)
    return doc


BNN.__doc__ = _with_vocabulary(BNN.__doc__)

class BNNRegressor(RegressorMixin, BNN):
    """``uqnn.BNN`` as a scikit-learn regressor: likelihood gaussian (default) or heteroscedastic;
    ``predict`` gives the posterior predictive mean and ``score`` R^2. One target (n,) or several
    (n, t). X must be 2-D. Same parameters, defaults and methods as ``uqnn.BNN``."""

    _require_2d = True
    # __init__ is BNN's: scikit-learn reads the parameters from its signature.

    def _fit_targets(self, y):
        if self.likelihood in ("bernoulli", "categorical"):
            raise ValueError(f"likelihood {self.likelihood!r} is a classifier's: use uqnn.BNNClassifier (or uqnn.BNN)")
        return super()._fit_targets(y)

    def _more_tags(self):  # scikit-learn < 1.6
        return {"multioutput": True}

    def __sklearn_tags__(self):  # scikit-learn >= 1.6
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags


class BNNClassifier(ClassifierMixin, BNN):
    """``uqnn.BNN`` as a scikit-learn classifier: any labels (numbers or strings, ``classes_``);
    two classes fit the bernoulli likelihood, more the categorical one. ``predict_proba`` gives
    the posterior predictive class probabilities (n, classes), ``predict`` the most probable label
    and ``score`` the accuracy. X must be 2-D. Same parameters, defaults and methods as
    ``uqnn.BNN`` but ``likelihood`` and ``noise``, which the labels decide."""

    _require_2d = True

    def __init__(self, hidden: Sequence[int] = DEFAULT_HIDDEN, activation: str = DEFAULT_ACTIVATION,
                 prior: str = DEFAULT_PRIOR, prior_sigma: float = DEFAULT_PRIOR_SIGMA,
                 standardize: bool = DEFAULT_STANDARDIZE, method: str = DEFAULT_METHOD, seed: int = DEFAULT_SEED,
                 threads: int = DEFAULT_THREADS, progress: bool = DEFAULT_PROGRESS,
                 out: str | os.PathLike | None = None, method_options: dict | None = None, **options: Any):
        _store(self, locals())

    def _likelihood_options(self) -> dict:
        return {}  # the labels decide: fit's target options

    def _labels(self, y) -> np.ndarray:
        if y is None:
            raise ValueError("this estimator requires y to be passed, but the target y is None")
        if hasattr(y, "to_numpy"):
            y = y.to_numpy()
        y = np.asarray(y)
        if y.ndim == 2 and y.shape[1] == 1:
            warnings.warn("A column-vector y was passed when a 1d array was expected. Please change the shape of y to "
                          "(n_samples,), for example using ravel().", DataConversionWarning, stacklevel=3)
            y = y.ravel()
        if y.ndim != 1:
            raise ValueError(f"y: expected one label per row (a 1-D array), got shape {y.shape}; multi-label "
                             "classification is not supported")
        if y.dtype.kind in "fc":
            _check_finite(y.reshape(-1, 1).astype(np.float64), "y", ["y"])
            if np.any(y != np.round(y)):
                raise ValueError("Unknown label type: continuous. BNNClassifier needs class labels (integers or "
                                 "strings); use BNNRegressor for a continuous target")
        return y

    def _fit_targets(self, y):
        labels = self._labels(y)
        if len(labels) == 0:
            raise ValueError("y: found array with 0 sample(s) while a minimum of 1 is required")
        classes, index = np.unique(labels, return_inverse=True)
        if len(classes) < 2:
            raise ValueError(f"y has only one class ({classes[0]!r}): a classifier needs at least 2 classes")
        self.classes_ = classes
        t = np.ascontiguousarray(index.reshape(-1, 1), dtype=np.float64)
        target = {"likelihood": "bernoulli"} if len(classes) == 2 else {"likelihood": "categorical", "classes": len(classes)}
        return t, ["y"], target

    def _targets(self, y) -> np.ndarray:
        labels = self._labels(y)
        index = np.searchsorted(self.classes_, labels)
        index = np.clip(index, 0, len(self.classes_) - 1)
        unknown = self.classes_[index] != labels
        if np.any(unknown):
            raise ValueError(f"y contains labels not seen in fit: {sorted(set(labels[unknown].tolist()))}")
        return np.ascontiguousarray(index.reshape(-1, 1), dtype=np.float64)

    def predict_proba(self, X) -> np.ndarray:
        """Posterior predictive probability of each class (columns in ``classes_`` order)."""
        f = self._require_fit()
        p = f.predict(self._x(X), [], self.seed)["mean"]
        if len(self.classes_) == 2:  # bernoulli: the probability of classes_[1]
            p = np.column_stack([1.0 - p[:, 0], p[:, 0]])
        return p

    def predict_conformal(self, X) -> np.ndarray:
        """``BNN.predict_conformal`` with columns in ``classes_`` order: the prediction sets as a
        boolean (n, classes) array (aps, raps), or the temperature-scaled probabilities (temperature)."""
        p = super().predict_conformal(X)
        if len(self.classes_) == 2 and p.shape[1] == 1:  # bernoulli probabilities: P(classes_[1])
            p = np.column_stack([1.0 - p[:, 0], p[:, 0]])
        return p

    def predict(self, X) -> np.ndarray:
        """The most probable label at each row of X."""
        p = self.predict_proba(X)
        return self.classes_[np.argmax(p, axis=1)]

    def _more_tags(self):  # scikit-learn < 1.6
        return {"binary_only": False, "multioutput": False}


def _restore_torch(est, directory, module=None) -> None:
    """A saved run of a PyTorch module: its network registered again (torch_module.pt, or `module`)
    and the estimator's PyTorch state restored; nothing for uqnn's own networks."""
    from ._torch_model import LastLayer, register_saved_network

    network = register_saved_network(directory, module)
    if network is not None:
        est._torch_network = network
        est._torch = {"module": network.module, "input_shape": network.input_shape, "subset": network.names, "last_layer": None}
        return
    head = LastLayer.load(directory, module)
    if head is not None:
        est._torch = {"module": head.module, "input_shape": head.input_shape, "subset": None, "last_layer": head}
        est._raw_features = int(np.prod(head.input_shape))


def load(path: str | os.PathLike, module=None) -> BNN:
    """A fitted BNN from a run directory written by ``uqnn fit`` or ``BNN.save``. A fit of a
    PyTorch module (``BNN.from_torch``, ``uqnn.TorchModel``) is read with its module, saved in the
    directory (torch_module.pt, which needs the module's class importable), or ``module`` when
    given (the same architecture)."""
    est_torch = BNN()
    _restore_torch(est_torch, os.fspath(path), module)
    f = _core.FittedModel.load(os.fspath(path))
    settings = f.model_json.get("settings", {}).get("settings", {})
    est = BNN(hidden=tuple(settings.get("arch", ())), activation=settings.get("activation", ""), likelihood=f.likelihood,
              noise=settings.get("noise"), prior=settings.get("prior", DEFAULT_PRIOR),
              prior_sigma=settings.get("prior_sigma", DEFAULT_PRIOR_SIGMA), standardize=settings.get("standardize", DEFAULT_STANDARDIZE),
              method=f.method, seed=int(settings.get("seed", DEFAULT_SEED)), threads=int(settings.get("threads", DEFAULT_THREADS)),
              out=os.fspath(path))
    est._fitted, est._tmp, est._dir = f, None, os.fspath(path)
    est._X_train = est._y_train = None
    est.n_features_in_ = len(f.input_names)
    for attr in ("_torch", "_torch_network", "_raw_features"):
        if hasattr(est_torch, attr):
            setattr(est, attr, getattr(est_torch, attr))

    metrics_path = os.path.join(path, "metrics.json")
    est.metrics_ = json.load(open(metrics_path)) if os.path.exists(metrics_path) else None
    return est


BNN.__doc__ += f"\n    Options of the default method ({DEFAULT_METHOD}):\n" + option_doc(_core.fit_option_groups(DEFAULT_METHOD))
