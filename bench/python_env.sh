# Sourced by the bench/*.sh scripts: makes sure bench/.venv (gitignored) exists and has the Python
# packages the benchmarks compare against. First run: torch (CPU wheel; PyPI's wheel if the PyTorch
# index is unreachable), jax[cpu], numpy, then the packages the caller lists in BENCH_PYTHON_EXTRA
# (e.g. "numpyro arviz pandas"). Sets $venv.
venv="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/.venv"
bench_python_modules="torch jax numpy ${BENCH_PYTHON_MODULES:-}"
bench_python_modules="$(echo $bench_python_modules | tr " " ",")"  # import a,b,c
if ! "$venv/bin/python" -c "import $bench_python_modules" 2>/dev/null; then
  echo "== setting up $venv" >&2
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --upgrade pip
  if ! "$venv/bin/python" -c "import torch" 2>/dev/null; then
    "$venv/bin/pip" install -q --retries 1 --timeout 20 torch --index-url https://download.pytorch.org/whl/cpu ||
      "$venv/bin/pip" install -q torch
  fi
  # shellcheck disable=SC2086
  "$venv/bin/pip" install -q "jax[cpu]" numpy ${BENCH_PYTHON_EXTRA:-}
fi
