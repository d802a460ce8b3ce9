"""uqnn: uncertainty quantification of neural networks (MCMC, VI, Laplace, ensembles, ...).

The estimator ``uqnn.BNN`` fits a Bayesian neural network to NumPy or pandas data with any method of
``uqnn fit``, with the CLI's defaults; ``uqnn.BNNRegressor`` and ``uqnn.BNNClassifier`` are its
scikit-learn regressor and classifier (Pipeline, GridSearchCV, cross_val_score); ``uqnn.load``
reads a run directory written by the CLI or by ``BNN.save``;
``uqnn.sample`` runs uqnn's samplers on any log density given as a Python callable or a C callback;
``uqnn.LogDensity`` gives a uqnn posterior to other samplers; ``uqnn.from_torch`` reads a PyTorch
``nn.Sequential``; ``uqnn.TorchModel`` fits any ``nn.Module`` through PyTorch; ``uqnn.thompson_bandit`` plays a contextual bandit with Thompson sampling; ``uqnn.evaluate``
scores a fit or another tool's predictions (CRPS, calibration, ECE, OOD detection, conformal).
"""
from ._bandit import thompson_bandit
from ._evaluate import evaluate
from ._estimator import BNN, BNNClassifier, BNNRegressor, load, method_names, vocabulary
from ._log_density import LogDensity
from ._sample import Interrupted, SampleResult, sample
from ._torch import from_torch
from ._torch_model import TorchModel

__all__ = ["BNN", "BNNRegressor", "BNNClassifier", "LogDensity", "from_torch", "TorchModel", "load", "method_names", "vocabulary", "sample", "SampleResult", "Interrupted", "thompson_bandit", "evaluate"]
__version__ = "0.1.0"
