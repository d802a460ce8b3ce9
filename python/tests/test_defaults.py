"""One default per option, whatever the door: `uqnn fit --help`, a TOML file, the Python estimators'
keyword defaults and what model.json records of a default run all agree with the one declaration of
each option in C++ (services/options.hpp)."""
import inspect
import json
import os
import re
import subprocess

import numpy as np
import pytest

import uqnn
from uqnn import _core

CLI = os.environ.get("UQNN_CLI")
needs_cli = pytest.mark.skipif(not CLI, reason="UQNN_CLI not set (ctest and run-pytest's callers set it)")

# Options whose value differs between doors on purpose, with the reason.
DOOR_SPECIFIC = {
    "data": "the CLI reads a CSV file, Python takes arrays",
    "out": "the CLI writes into ./uqnn-out, the Python estimators into a temporary directory unless out= is given",
    "figure": "the CLI draws figures (png); the Python estimators draw none (matplotlib is the user's)",
}
# Python keyword -> option name, where they differ.
KEYWORD_OPTION = {"hidden": "arch", "progress": "quiet"}
HELP_LINE = re.compile(r"^  (--[a-z0-9-]+)\b.*?\[default (.*?); ")


def help_defaults(method=None) -> dict:
    """{option name: default text} as `uqnn fit [--method M] --help` prints them."""
    args = [CLI, "fit"] + (["--method", method] if method else []) + ["--help"]
    text = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    out = {}
    for line in text.splitlines():
        m = HELP_LINE.match(line)
        if m:
            out[m.group(1)[2:].replace("-", "_")] = m.group(2)
    return out


def as_help_text(value) -> str:
    """A default as --help writes it (apps/uqnn/fit_flags.cpp's default_text)."""
    if value is None:
        return "unset"
    if isinstance(value, str):
        return value or "none"
    if isinstance(value, (list, tuple)):
        return ",".join(v if isinstance(v, str) else json.dumps(v) for v in value) or "none"
    return json.dumps(value)


def same(help_text: str, value) -> bool:
    """The --help text names this value (numbers compared as numbers: 1e-05 and 0.00001 agree)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return float(help_text) == float(value)
        except ValueError:
            return False
    return help_text == as_help_text(value)


def declared(method) -> dict:
    """The declarations as the Python module reads them (BNN.options(method) prints these)."""
    return {o["name"]: o["default"] for g in _core.fit_option_groups(method) for o in g["options"]}


DEFAULT_METHOD = next(o["default"] for g in _core.all_option_groups() for o in g["options"] if o["name"] == "method")


@needs_cli
@pytest.mark.parametrize("method", _core.method_names())
def test_cli_help_and_python_declare_the_same_defaults(method):
    shown = help_defaults(method)
    python = declared(method)
    assert set(shown) == set(python), "options in one door only"
    wrong = {name: (shown[name], python[name]) for name in python if not same(shown[name], python[name])}
    assert not wrong, f"--help vs uqnn.BNN.options({method!r}): {wrong}"


@needs_cli
@pytest.mark.parametrize("cls", [uqnn.BNN, uqnn.BNNRegressor, uqnn.BNNClassifier], ids=lambda c: c.__name__)
def test_estimator_keyword_defaults_are_the_cli_defaults(cls):
    shown = help_defaults()  # no --method: every option, with the fit's defaults
    checked = []
    for name, p in inspect.signature(cls.__init__).parameters.items():
        if name in ("self", "method_options", "options") or name in DOOR_SPECIFIC:
            continue
        option = KEYWORD_OPTION.get(name, name)
        value = (not p.default) if name == "progress" else p.default
        assert option in shown, f"{cls.__name__}({name}=...) is no option of uqnn fit"
        assert same(shown[option], value), f"{cls.__name__}({name}={p.default!r}) but uqnn fit --{option.replace('_', '-')} defaults to {shown[option]}"
        checked.append(name)
    assert {"hidden", "activation", "method", "prior", "seed"} <= set(checked)
    assert cls().method_options is None  # nothing else is set: the rest are the declarations' defaults


def _settings(run_dir) -> dict:
    with open(os.path.join(run_dir, "model.json")) as fh:
        return json.load(fh)["settings"]["settings"]


def _toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return repr(float(value)) if isinstance(value, float) else str(value)


@needs_cli
def test_a_default_fit_records_the_declared_defaults_through_every_door(sine, tmp_path):
    """A fit given nothing but data through the CLI, through a TOML file that spells out every
    default, and through uqnn.BNN() records the same settings in model.json, and they are the
    defaults --help shows."""
    X, y = sine
    data = tmp_path / "sine.csv"
    np.savetxt(data, np.column_stack([X, y]), delimiter=",", header="x0,y", comments="")
    shown = help_defaults(DEFAULT_METHOD)

    # CLI: only the data and where to write
    cli_dir = tmp_path / "cli"
    subprocess.run([CLI, "fit", "--data", str(data), "--out", str(cli_dir)], check=True, capture_output=True)
    # TOML: every option of the default method at its declared default (unset values and empty
    # paths have no TOML spelling: they are left out)
    toml_dir = tmp_path / "toml"
    lines = [f"data = {json.dumps(str(data))}", f"out = {json.dumps(str(toml_dir))}"]
    spelled = 0
    groups = _core.fit_option_groups(DEFAULT_METHOD)
    defaults = {o["name"]: o["default"] for g in groups for o in g["options"]}
    for g in groups:
        for o in g["options"]:
            if o["name"] in ("data", "out") or o["default"] is None or (o["type"] == "path" and o["default"] == ""):
                continue
            # An option read only under another option's value (--classes under --likelihood categorical)
            # is refused when given without it, even at its default.
            if o["only_when_option"] and str(defaults[o["only_when_option"]]) not in o["only_when_values"]:
                continue
            lines.append(f"{o['name']} = {_toml_value(o['default'])}")
            spelled += 1
    config = tmp_path / "fit.toml"
    config.write_text("\n".join(lines) + "\n")
    subprocess.run([CLI, "fit", "--config", str(config)], check=True, capture_output=True)
    # Python: the estimator's defaults
    py_dir = tmp_path / "py"
    uqnn.BNN(out=py_dir).fit(X, y)

    doors = {"cli": _settings(cli_dir), "toml": _settings(toml_dir), "python": _settings(py_dir)}
    assert spelled > 30
    for door, settings in doors.items():
        assert set(settings) == set(shown), f"{door}: recorded options differ from --help's"
        wrong = {name: (settings[name], shown[name]) for name in settings
                 if name not in DOOR_SPECIFIC and not same(shown[name], settings[name])}
        assert not wrong, f"{door} door's model.json settings vs uqnn fit --help defaults: {wrong}"
    for name in doors["cli"]:
        if name not in DOOR_SPECIFIC:
            assert doors["cli"][name] == doors["toml"][name] == doors["python"][name], name
    assert doors["python"]["figure"] == "none" and doors["cli"]["figure"] == shown["figure"]
