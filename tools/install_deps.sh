#!/usr/bin/env bash
# Installs the Debian packages tensorscope builds with, when they are missing.
# As root it runs apt-get; otherwise it prints the exact line to run and fails.
# The CUDA toolkit (nvcc, cuBLAS, CUPTI, NVTX) is expected under /usr/local/cuda
# or on PATH; it does not come from Debian's archive.
set -euo pipefail

# Tools count as present when they are on PATH, however they were installed
# (a pip-installed cmake or ninja will do); libraries when dpkg has them.
tools=(cmake:cmake ninja:ninja-build g++:g++ make:make python3:python3 pkg-config:pkg-config)
libraries=(libfmt-dev doctest-dev libcli11-dev nlohmann-json3-dev libopenblas-dev zlib1g-dev
           python3-venv)  # python3-venv: tools/hta_check.py installs HTA from PyPI into a venv (~500 MB)

missing=()
for entry in "${tools[@]}"; do
  command -v "${entry%%:*}" >/dev/null || missing+=("${entry#*:}")
done
for p in "${libraries[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  if [[ $(id -u) -eq 0 ]]; then
    echo "tensorscope: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}"
  else
    echo "tensorscope: missing packages. Run:" >&2
    echo "  sudo apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
fi

if ! command -v nvcc >/dev/null && [[ ! -x /usr/local/cuda/bin/nvcc ]]; then
  echo "tensorscope: nvcc not found. Install the CUDA toolkit (13.0) under /usr/local/cuda" >&2
  echo "  or put its bin/ on PATH; no GPU is needed to build." >&2
  exit 1
fi
