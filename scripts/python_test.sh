#!/usr/bin/env bash
# The Python package's job: `pip install .` into a fresh virtual environment, then its
# pytest suite (tests/python: every op on both CPU backends against the CLI, bit for bit;
# errors; pack/convert; launch checks) and the example (examples/python/minilm_layer.py).
#   scripts/python_test.sh        (scripts/test.sh runs it after the C++ tests)
# Needs the CLI of the CMake build (QUANTC_CLI, default build/bin/quantc), the test model
# (scripts/fetch_model.sh) and PyPI for nanobind, scikit-build-core and the test packages.
# Environment: QUANTC_PYTHON (default /usr/bin/python3, the interpreter python3-venv
# serves), QUANTC_VENV (default build/python-venv; recreated on every run).
set -euo pipefail
cd "$(dirname "$0")/.."
python=${QUANTC_PYTHON:-/usr/bin/python3}
venv=${QUANTC_VENV:-build/python-venv}
export QUANTC_CLI=${QUANTC_CLI:-$PWD/build/bin/quantc}

rm -rf "$venv"
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r tests/python/requirements.txt
# The extension module builds in build-python/<wheel tag> (pyproject.toml), reused by later runs.
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check .
# From another folder, so `import quantc` is the installed package and not the source tree.
(cd "$venv" && bin/python -c "import quantc; print('quantc', quantc.__version__, 'installed:', quantc.ops()[0]['name'], '...')")
"$venv/bin/python" -m pytest -q -rs tests/python
"$venv/bin/python" examples/python/minilm_layer.py
