import numpy as np
import pytest


@pytest.fixture(scope="session")
def sine():
    """Seed 000's sine data, small: y = sin(x) + noise on [-3, 3]."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-3, 3, size=(60, 1))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=60)
    return X, y


# The small regression set of the PyTorch tests (test_torch.py, test_torch_backed.py).
@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(30, 2))
    y = np.sin(X[:, 0]) - 0.5 * X[:, 1] + 0.1 * rng.normal(size=30)
    return X, y
