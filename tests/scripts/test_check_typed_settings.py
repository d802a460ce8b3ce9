"""scripts/check-typed-settings fails on a string-keyed read of settings and passes typed reads."""
import pathlib
import subprocess
import sys

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "scripts" / "check-typed-settings"


def run_on(tmp_path: pathlib.Path, source: str) -> subprocess.CompletedProcess:
    method_file = tmp_path / "src" / "services" / "method_planted.cpp"
    method_file.parent.mkdir(parents=True)
    method_file.write_text(source)
    for folder in ("apps/uqnn", "python/src"):
        (tmp_path / folder).mkdir(parents=True)
    return subprocess.run([sys.executable, str(SCRIPT), str(tmp_path)], capture_output=True, text=True)


def test_a_string_keyed_read_is_found_with_its_file_and_line(tmp_path):
    r = run_on(tmp_path, "int a = 1;\nconst double chains = config.method_settings.value(\"chains\", 4L);\n")
    assert r.returncode == 1
    assert "src/services/method_planted.cpp:2:" in r.stdout


def test_every_form_of_string_keyed_read_is_found(tmp_path):
    reads = ['s.settings.at("x")', 'settings["x"].get<int>()', 'settings.contains("x")', 'settings.find("x")']
    r = run_on(tmp_path, "\n".join(f"auto v{i} = {read};" for i, read in enumerate(reads)) + "\n")
    assert r.returncode == 1
    assert r.stdout.count("method_planted.cpp:") == len(reads)


def test_typed_reads_and_writes_pass(tmp_path):
    r = run_on(tmp_path, "const ChainOptions o = chain_options().read(config.method_settings);\n"
                         "result.settings[\"method\"] = method;\n")
    assert r.returncode == 0, r.stdout


def test_the_repository_has_none():
    r = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout
