"""The package's lists of names come from the C++ registries (uqnn.vocabulary()), never typed twice."""
import uqnn
from uqnn import _bandit, _estimator


def test_vocabulary_lists_every_closed_set():
    v = uqnn.vocabulary()
    for kind in ("method", "model", "activation", "init", "likelihood", "prior", "optimizer", "lr_schedule", "bandit_agent"):
        assert v[kind], kind
        for entry in v[kind]:
            assert entry["name"] and entry["summary"], (kind, entry)
    assert [m["name"] for m in v["method"]] == uqnn.method_names()


def test_docstrings_name_every_entry_of_their_registry():
    v = uqnn.vocabulary()
    doc = uqnn.BNN.__doc__
    assert "{" not in doc, "a placeholder was left unfilled"
    for kind in ("activation", "likelihood", "prior", "method"):
        for entry in v[kind]:
            assert entry["name"] in doc, (kind, entry["name"])
    for agent in v["bandit_agent"]:
        assert f'``"{agent["name"]}"``' in uqnn.thompson_bandit.__doc__


def test_shrinkage_priors_and_bandit_agents_come_from_the_registries():
    v = uqnn.vocabulary()
    assert set(_estimator.SHRINKAGE_PRIORS) == {p["name"] for p in v["prior"] if p["shrinkage"]}
    assert set(_estimator.SHRINKAGE_PRIORS) == {"horseshoe", "regularized-horseshoe", "ard"}
    assert _bandit.AGENTS == tuple(a["name"] for a in v["bandit_agent"])


def test_methods_say_whether_they_fit_class_labels():
    by_name = {m["name"]: m for m in uqnn.vocabulary()["method"]}
    assert not by_name["nngp"]["handles_classification"]
    assert by_name["nuts"]["handles_classification"]
    assert by_name["nuts"]["family"] == "MCMC"
