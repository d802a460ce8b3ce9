import numpy as np
import pytest


@pytest.fixture(scope="session")
def sine():
    """Seed 000's sine data, small: y = sin(x) + noise on [-3, 3]."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-3, 3, size=(60, 1))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=60)
    return X, y
