"""scikit-learn's base classes when scikit-learn is installed, and small stand-ins otherwise.

The estimators follow scikit-learn's developer guide either way (keyword parameters stored unchanged,
``get_params`` / ``set_params``, validation in ``fit``); with scikit-learn installed they are its
``BaseEstimator`` subclasses, so ``clone``, ``Pipeline``, ``GridSearchCV`` and ``check_estimator``
see them as their own. uqnn itself needs only NumPy.
"""
from __future__ import annotations

import inspect

import numpy as np

try:
    from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
    from sklearn.exceptions import DataConversionWarning, NotFittedError

    HAVE_SKLEARN = True
except ImportError:  # pragma: no cover - exercised only without scikit-learn
    HAVE_SKLEARN = False

    class NotFittedError(ValueError, AttributeError):
        """An estimator used before ``fit`` (scikit-learn's exception of the same name)."""

    class DataConversionWarning(UserWarning):
        """A column vector y given where a 1-D one is expected."""

    class BaseEstimator:
        """``get_params`` / ``set_params`` from the keyword parameters of ``__init__``."""

        @classmethod
        def _get_param_names(cls):
            sig = inspect.signature(cls.__init__)
            return sorted(p.name for p in sig.parameters.values() if p.name != "self" and p.kind != p.VAR_KEYWORD)

        def get_params(self, deep=True):
            return {name: getattr(self, name) for name in self._get_param_names()}

        def set_params(self, **params):
            valid = self.get_params()
            for name, value in params.items():
                if name not in valid:
                    raise ValueError(f"Invalid parameter {name!r} for estimator {type(self).__name__}")
                setattr(self, name, value)
            return self

        def __repr__(self):
            params = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
            return f"{type(self).__name__}({params})"

    class RegressorMixin:
        _estimator_type = "regressor"

        def score(self, X, y, sample_weight=None):
            """The coefficient of determination R^2 of ``predict(X)`` (scikit-learn's r2_score)."""
            y = np.asarray(y, dtype=np.float64)
            p = np.asarray(self.predict(X), dtype=np.float64).reshape(y.shape)
            w = np.ones(len(y)) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
            w = w.reshape(-1, *([1] * (y.ndim - 1)))
            num = (w * (y - p) ** 2).sum(axis=0)
            den = (w * (y - np.average(y, axis=0, weights=w.ravel())) ** 2).sum(axis=0)
            return float(np.mean(1 - num / den))

    class ClassifierMixin:
        _estimator_type = "classifier"

        def score(self, X, y, sample_weight=None):
            """The accuracy of ``predict(X)``."""
            hit = np.asarray(self.predict(X)) == np.asarray(y)
            return float(np.average(hit, weights=sample_weight))
