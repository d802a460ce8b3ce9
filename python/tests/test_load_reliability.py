"""uqnn.load on a model.json of unchecked sizes or types: a ValueError naming the field, never a
MemoryError, a RuntimeError or a model of the wrong shape (docs/reliability.md)."""
import json

import pytest

import uqnn


@pytest.fixture(scope="module")
def saved_run(sine, tmp_path_factory):
    X, y = sine
    fit = uqnn.BNN(hidden=(3,), method="map", epochs=5, progress=False).fit(X, y)
    path = tmp_path_factory.mktemp("load") / "run"
    fit.save(path)
    return path


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda j: j["model"].update(hidden=[1e9, 10]), r"model\.hidden\[0\]: 1000000000\.0 is invalid"),
        (lambda j: j["model"].update(input_dim=1e12), r"model\.input_dim: 1000000000000\.0 is invalid"),
        (lambda j: j["model"].update(input_dim=6.5), r"model\.input_dim: 6\.5 is invalid"),
        (lambda j: j.update(num_draws=-1), r"num_draws: -1 is invalid"),
        (lambda j: j.pop("model"), r"field 'model' is missing"),
    ],
)
def test_load_refuses_a_model_json_of_unchecked_sizes_or_types(saved_run, edit, message):
    good = (saved_run / "model.json").read_text()
    try:
        model = json.loads(good)
        edit(model)
        (saved_run / "model.json").write_text(json.dumps(model))
        with pytest.raises(ValueError, match=message):
            uqnn.load(saved_run)
    finally:
        (saved_run / "model.json").write_text(good)


def test_load_refuses_a_model_json_that_is_a_directory(saved_run, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "model.json").mkdir()
    with pytest.raises(ValueError, match="is a directory, not a file"):
        uqnn.load(run)
