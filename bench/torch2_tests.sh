#!/usr/bin/env bash
# The PyTorch-backed model's tests (python/tests/test_torch_backed.py) under PyTorch 2.x, whose
# torch.func path (functional_call, forward-mode jvp) Debian's 1.13 does not have: a virtual
# environment beside the build with PyPI's CPU wheel of torch (and pytest), Debian's NumPy and
# scikit-learn visible. The Release suite runs the same tests on Debian's 1.13.
# Usage: bench/torch2_tests.sh   (BUILD_DIR=build by default; needs the network once, for the wheel)
set -euo pipefail
source "$(dirname "$0")/bench_common.sh"
env_dir="$build/torch2-env"
if [ ! -x "$env_dir/bin/python" ]; then
  /usr/bin/python3 -m venv --system-site-packages "$env_dir"
  # PyTorch's CPU-only index first (a 200 MB wheel); where it is unreachable, PyPI's wheel (with
  # its CUDA libraries, a few GB, unused on a CPU).
  "$env_dir/bin/pip" install -q "torch>=2.1" --index-url https://download.pytorch.org/whl/cpu ||
    "$env_dir/bin/pip" install -q "torch>=2.1"
fi
"$env_dir/bin/python" -c "import torch, torch.func; print('torch', torch.__version__)"
cd "$build"
PYTHONPATH="$build/python" "$env_dir/bin/python" -m pytest -q -p no:cacheprovider "$root/python/tests/test_torch_backed.py" "$@"
