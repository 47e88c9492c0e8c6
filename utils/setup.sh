#!/usr/bin/env bash
# Installs every Debian package trn needs, makes the project's Python
# environment (.venv: torch 2.13 CPU, numpy, pytest, transformers from
# python/requirements.txt), then configures and builds build/ and makes
# `import trn` work in .venv/bin/python.
# Idempotent: packages already present are not reinstalled, the environment is
# only updated when python/requirements.txt changes, the build is incremental.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${TRN_BUILD_DIR:-$root/build}

say() { printf '[setup] %s\n' "$*"; }

packages=(
  build-essential cmake ninja-build ccache lld-19 pkg-config git
  llvm-19-dev libmlir-19-dev mlir-19-tools llvm-19-tools
  libtbb-dev libxxhash-dev libzstd-dev zstd
  libgtest-dev libgmock-dev
  pybind11-dev python3-dev python3-venv
  libopenmpi-dev openmpi-bin
  slurmctld slurmd slurm-client munge
  libopenblas-dev
  nlohmann-json3-dev libzip-dev zlib1g-dev
  clang-format
  clang-14 libclang-rt-14-dev
  sshfs openssh-server fuse3
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  say "installing ${#missing[@]} Debian packages: ${missing[*]}"
  if [[ $(id -u) -ne 0 ]]; then
    if command -v sudo >/dev/null 2>&1; then
      SUDO=sudo
    else
      echo "[setup] error: packages missing (${missing[*]}) and not running as root; rerun as root or install them with apt-get" >&2
      exit 1
    fi
  else
    SUDO=
  fi
  if ! $SUDO apt-get update -q; then
    echo "[setup] error: 'apt-get update' failed; check network access to the Debian archive" >&2
    exit 1
  fi
  if ! DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"; then
    echo "[setup] error: 'apt-get install' failed for: ${missing[*]}; check network access to the Debian archive" >&2
    exit 1
  fi
else
  say "all ${#packages[@]} Debian packages already installed"
fi

# The project's Python: a virtual environment on Debian's python3 (3.11, the
# headers the extension builds against), packages from PyPI.
venv=${TRN_VENV:-$root/.venv}
python=$venv/bin/python
requirements=$root/python/requirements.txt
stamp=$venv/.trn-requirements
if [[ ! -x $python ]]; then
  say "making the project's Python environment $venv (Debian's python3 -m venv)"
  /usr/bin/python3 -m venv "$venv"
fi
if ! cmp -s "$requirements" "$stamp"; then
  say "installing the Python packages of python/requirements.txt into $venv (pip; torch 2.13.0 CPU)"
  if ! "$python" -m pip install --disable-pip-version-check -q -r "$requirements"; then
    echo "[setup] error: 'pip install -r python/requirements.txt' failed; check access to PyPI (torch==2.13.0 CPU must come from the local wheel, see DEVELOPERS.md)" >&2
    exit 1
  fi
  cp "$requirements" "$stamp"
else
  say "Python environment $venv up to date ($("$python" -c 'import torch; print("torch", torch.__version__)'))"
fi

llvm_prefix=$(llvm-config-19 --prefix)
launcher=()
if command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi

if [[ ! -f $build_dir/build.ninja ]]; then
  say "configuring $build_dir (LLVM/MLIR at $llvm_prefix)"
  cmake -G Ninja -S "$root" -B "$build_dir" \
    -DCMAKE_BUILD_TYPE=${TRN_BUILD_TYPE:-Release} \
    -DMLIR_DIR="$llvm_prefix/lib/cmake/mlir" \
    -DLLVM_EXTERNAL_LIT="$llvm_prefix/build/utils/lit/lit.py" \
    -DTRN_PYTHON="$python" \
    "${launcher[@]}"
elif ! grep -qx "TRN_PYTHON:FILEPATH=$python" "$build_dir/CMakeCache.txt"; then
  say "reconfiguring $build_dir for the Python of $venv"
  cmake "$build_dir" -DTRN_PYTHON="$python"
else
  say "reusing configured $build_dir"
fi

jobs=${TRN_JOBS:-$(nproc)}
say "building with ninja -j$jobs"
start=$(date +%s)
ninja -C "$build_dir" -j"$jobs"
say "build done in $(($(date +%s) - start)) s"

# Make `import trn` work in the project's Python without environment
# variables: a .pth file in the environment's site directory names this
# build's package directory (the usual "editable install"; the last tree set
# up wins).
site_dir=$("$python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
pth_line="$build_dir/python"
if [[ $(cat "$site_dir/trn.pth" 2>/dev/null) != "$pth_line" ]]; then
  printf '%s\n' "$pth_line" >"$site_dir/trn.pth"
  say "'import trn' in $python now loads $pth_line"
else
  say "'import trn' in $python loads $pth_line"
fi
