#!/usr/bin/env bash
# tools/cuda_toolkit_check.sh: does every translation unit that touches CUDA, CUPTI, cuBLAS or NVTX
# headers compile with an older CUDA toolkit? Prints one line per file (OK, or FAIL with the first
# error), then a summary; exits non-zero when a file fails.
#
#   tools/cuda_toolkit_check.sh 12.4     # an older 12.x, assembled from packages (below)
#   tools/cuda_toolkit_check.sh 13.0     # the installed toolkit ($CUDA_HOME) itself: the control
#
# How: a compile database is configured with the installed toolkit (build/toolkit-check/db);
# the translation units are those whose dependency list (g++ -M, nvcc -M) names a file of that
# toolkit; each command is then rerun with the older toolkit: its nvcc for .cu files (compiled
# to an object, so cicc and ptxas run too), its headers for .cpp files (g++ -fsyntax-only: the
# host compiler is unchanged). The .cu files are compiled for sm_80 (every 12.x has it), the two
# sm_90a files keep compute_90a. Nothing is linked but a tiny program, against the older
# libcudart and libcupti, as a smoke test of the assembled toolkit itself.
#
# Where the older toolkit comes from (downloaded once, cached in $TS_TOOLKIT_CACHE, default
# ${XDG_CACHE_HOME:-$HOME/.cache}/tensorscope-toolkits):
#   - headers and libraries: NVIDIA's PyPI wheels nvidia-{cuda-runtime,cuda-cupti,cublas,nvtx,
#     cuda-cccl,cuda-nvcc}-cu12==VERSION.* (the nvcc wheel brings ptxas, libnvvm, libdevice and
#     the crt headers, but not the nvcc driver, cudafe++ or cicc);
#   - the compiler front end (nvcc, cudafe++, cicc, fatbinary, nvlink): Debian's non-free
#     package nvidia-cuda-toolkit of the same minor version, fetched with apt-get download under
#     a private apt state in the cache (it does not touch the system's apt sources). Debian has
#     12.4 (trixie, sid) and 12.5 (experimental). For other versions the .cu files are reported
#     SKIP (the .cpp files are still checked), and the exit status says so (2).
# Needs: python3 with pip, PyPI and Debian's archive reachable, cmake, ninja, g++, unzip,
# apt-get and dpkg-deb. About 600 MB of downloads per version.
set -uo pipefail

version=${1:?usage: tools/cuda_toolkit_check.sh VERSION (e.g. 12.4)}
repo=$(cd "$(dirname "$0")/.." && pwd)
cuda_home=${CUDA_HOME:-/usr/local/cuda}
cache=${TS_TOOLKIT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tensorscope-toolkits}
work=${TS_TOOLKIT_CHECK_DIR:-$repo/build/toolkit-check}
jobs=${JOBS:-$(nproc)}
die() { echo "cuda_toolkit_check: $*" >&2; exit 1; }

nvcc_release() { "$1/bin/nvcc" --version | sed -n 's/.*release \([0-9.]*\),.*/\1/p'; }
default_release=$(nvcc_release "$cuda_home") || die "no nvcc under $cuda_home (set CUDA_HOME)"

# --- the older toolkit --------------------------------------------------------------------------
frontend=yes
if [[ $version == "$default_release" ]]; then
  tk=$cuda_home
  origin="the installed toolkit (CUDA_HOME)"
else
  [[ $version =~ ^12\.[0-9]+$ ]] || die "VERSION is $default_release (installed) or 12.N"
  tk=$cache/cuda-$version
  origin="PyPI wheels nvidia-*-cu12==$version.*"
  if [[ ! -f $tk/.assembled ]]; then
    echo "assembling CUDA $version (once, cached)" >&2
    rm -rf "$tk" "$cache/unpacked-$version"
    mkdir -p "$cache/wheels-$version" "$cache/unpacked-$version" || die "cannot write $cache"
    platforms=()
    for p in manylinux1 manylinux2010 manylinux2014 manylinux_2_17 manylinux_2_25 manylinux_2_27 manylinux_2_28; do
      platforms+=(--platform "${p}_x86_64")
    done
    python3 -m pip download --quiet --no-deps --only-binary=:all: "${platforms[@]}" \
      --python-version 3.11 -d "$cache/wheels-$version" \
      "nvidia-cuda-nvcc-cu12==$version.*" "nvidia-cuda-runtime-cu12==$version.*" \
      "nvidia-cuda-cupti-cu12==$version.*" "nvidia-cublas-cu12==$version.*" \
      "nvidia-nvtx-cu12==$version.*" "nvidia-cuda-cccl-cu12==$version.*" >&2 || die "pip download failed"
    for w in "$cache/wheels-$version"/*.whl; do unzip -q -o "$w" -d "$cache/unpacked-$version" || die "unzip $w"; done
    u=$cache/unpacked-$version/nvidia
    mkdir -p "$tk"/{bin/crt,include,lib64,nvvm/bin,nvvm/lib64,nvvm/libdevice}
    for c in cuda_runtime cuda_cupti cublas nvtx cuda_cccl cuda_nvcc; do cp -r "$u/$c/include/." "$tk/include/"; done
    rm -f "$tk/include/__init__.py"
    for c in cuda_runtime cuda_cupti cublas nvtx; do cp -a "$u/$c/lib/"*.so* "$tk/lib64/"; done
    (cd "$tk/lib64" && for f in *.so.*; do [[ -e ${f%%.so.*}.so ]] || ln -s "$f" "${f%%.so.*}.so"; done)
    cp "$u/cuda_nvcc/bin/ptxas" "$tk/bin/"
    cp "$u/cuda_nvcc/nvvm/lib64/"* "$tk/nvvm/lib64/"
    cp "$u/cuda_nvcc/nvvm/libdevice/"* "$tk/nvvm/libdevice/"

    # The front end from Debian: a private apt state, so the system's sources stay as they are.
    apt=$cache/apt
    mkdir -p "$apt/lists/partial" "$apt/archives/partial"
    kr=/usr/share/keyrings/debian-archive-keyring.gpg
    printf 'deb [signed-by=%s] http://deb.debian.org/debian %s non-free\n' \
      "$kr" trixie "$kr" sid "$kr" experimental >"$apt/sources.list"
    aptopts=(-o Dir::Etc::SourceList="$apt/sources.list" -o Dir::Etc::SourceParts=/nonexistent
      -o Dir::State::Lists="$apt/lists" -o Dir::Cache="$apt" -o Dir::State::status=/dev/null
      -o APT::Architecture=amd64 -o Acquire::Languages=none -o APT::Sandbox::User=root)
    apt-get "${aptopts[@]}" -qq update >&2 || echo "apt-get update failed: no Debian front end" >&2
    debver=$(apt-cache "${aptopts[@]}" madison nvidia-cuda-toolkit 2>/dev/null |
      awk -F'|' -v v="$version" '{gsub(/ /,"",$2)} index($2, v".")==1 {print $2; exit}')
    if [[ -n $debver ]]; then
      mkdir -p "$cache/debs-$version" && rm -rf "$cache/debs-$version/x"
      (cd "$cache/debs-$version" && apt-get "${aptopts[@]}" -qq download "nvidia-cuda-toolkit=$debver") >&2 &&
        dpkg-deb -x "$cache/debs-$version"/nvidia-cuda-toolkit_*.deb "$cache/debs-$version/x" || die "Debian nvidia-cuda-toolkit $debver"
      d=$cache/debs-$version/x/usr
      cp "$d/lib/nvidia-cuda-toolkit/bin/nvcc" "$d/bin/"{cudafe++,fatbinary,nvlink,bin2c,cu++filt} "$tk/bin/"
      cp "$d/lib/nvidia-cuda-toolkit/bin/crt/"* "$tk/bin/crt/"
      cp "$d/lib/nvidia-cuda-toolkit/bin/cicc" "$tk/nvvm/bin/"
      echo "$debver" >"$tk/.frontend"
      # nvcc reads its directory layout from nvcc.profile beside it.
      cat >"$tk/bin/nvcc.profile" <<'EOF'
TOP              = $(_HERE_)/..
CICC_PATH        = $(TOP)/nvvm/bin
NVVMIR_LIBRARY_DIR = $(TOP)/nvvm/libdevice
LD_LIBRARY_PATH += $(TOP)/lib64:
PATH            += $(CICC_PATH):$(_HERE_):
INCLUDES        +=  "-I$(TOP)/include" $(_SPACE_)
LIBRARIES        =+ $(_SPACE_) "-L$(TOP)/lib64"
CUDAFE_FLAGS    +=
PTXAS_FLAGS     +=
EOF
    fi
    touch "$tk/.assembled"
  fi
  if [[ -f $tk/.frontend ]]; then
    origin+=", nvcc front end from Debian's nvidia-cuda-toolkit $(cat "$tk/.frontend")"
  else
    frontend=no
    origin+=", no nvcc front end (not on PyPI; Debian has none of this version)"
  fi
fi

mkdir -p "$work"
out=$work/cuda-$version
rm -rf "$out" && mkdir -p "$out/logs" "$out/obj"
echo "CUDA $version: $origin"
echo "CUDA_VERSION (cuda.h): $(sed -n 's/^#define CUDA_VERSION \([0-9]*\).*/\1/p' "$tk/include/cuda.h"), CUPTI_API_VERSION (cupti_version.h): $(sed -n 's/^#define CUPTI_API_VERSION \([0-9]*\).*/\1/p' "$tk/include/cupti_version.h")"
[[ $frontend == yes ]] && echo "nvcc: $("$tk/bin/nvcc" --version | tail -1)"

# --- smoke test: the toolkit compiles a kernel and links libcudart and libcupti -----------------
cat >"$out/smoke.cu" <<'EOF'
#include <cuda_runtime.h>
#include <cupti.h>
#include <cstdio>
__global__ void twice(float* x) { x[threadIdx.x] *= 2.0f; }
int main() {
  uint32_t v = 0;
  cuptiGetVersion(&v);
  int rt = 0;
  cudaRuntimeGetVersion(&rt);
  std::printf("%u %d\n", v, rt);
}
EOF
if [[ $frontend == yes ]]; then
  if "$tk/bin/nvcc" -std=c++20 -arch=sm_80 -cudart shared "$out/smoke.cu" -o "$out/smoke" \
       -L"$tk/lib64" -lcupti -Xlinker -rpath="$tk/lib64" >"$out/logs/smoke.log" 2>&1 &&
     ldd "$out/smoke" | grep -q "$tk/lib64/libcupti"; then
    echo "smoke test: a kernel compiled and linked against this toolkit's libcudart and libcupti: OK"
  else
    echo "smoke test: FAIL ($(grep -m1 -i error "$out/logs/smoke.log"))"
  fi
fi

# --- the compile database, with the installed toolkit -------------------------------------------
db=$work/db
# Built for 90 alone, whatever the default would pick: one --generate-code flag per .cu file to
# retarget, and the sm_90a objects in the database.
cmake -S "$repo" -B "$db" -G Ninja -DCMAKE_CUDA_COMPILER="$cuda_home/bin/nvcc" -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$out/logs/configure.log" 2>&1 ||
  { tail -20 "$out/logs/configure.log"; die "cmake configure failed"; }

# --- the check ----------------------------------------------------------------------------------
REPO=$repo DB=$db CUDA_HOME_DEFAULT=$cuda_home TK=$tk OUT=$out FRONTEND=$frontend JOBS=$jobs python3 - <<'PY'
import json, os, re, shlex, subprocess, sys
from concurrent.futures import ThreadPoolExecutor

repo, db, default, tk, out = (os.environ[k] for k in ("REPO", "DB", "CUDA_HOME_DEFAULT", "TK", "OUT"))
frontend = os.environ["FRONTEND"] == "yes"
defaults = sorted({default, os.path.realpath(default)}, key=len, reverse=True)
entries, seen = [], set()
for e in json.load(open(os.path.join(db, "compile_commands.json"))):
    if e["file"] not in seen:  # a file built into two targets is checked once
        seen.add(e["file"])
        entries.append(e)

def run(args, cwd):
    p = subprocess.run(args, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return p.returncode, p.stdout

def drop_output(args):
    a = list(args)
    if "-o" in a:
        i = a.index("-o")
        del a[i:i + 2]
    return a

def touches_cuda(e):
    # The dependency list with the installed toolkit: does any header come from it?
    a = drop_output(shlex.split(e["command"]))
    a = [x for x in a if x != "-c"] + ["-M"]
    rc, text = run(a, e["directory"])
    return rc == 0 and any(d + "/" in text for d in defaults), rc, text

def retarget(e):
    a = shlex.split(e["command"])
    cu = e["file"].endswith(".cu")
    new = []
    for x in a:
        for d in defaults:
            x = x.replace(d + "/", tk + "/")
        if cu and (x.startswith("--generate-code=arch=compute_90,") or x.startswith("-gencode=arch=compute_90,")):
            x = "--generate-code=arch=compute_80,code=[compute_80,sm_80]"
        new.append(x)
    if cu:  # nvcc all the way: the front end, cicc and ptxas
        i = new.index("-o")
        new[i + 1] = os.path.join(out, "obj", os.path.relpath(e["file"], repo).replace("/", "_") + ".o")
        return new
    return drop_output(new) + ["-fsyntax-only"]  # the host compiler meets the old headers; no object needed

def first_error(text):
    lines = [l for l in text.splitlines() if l.strip()]
    for l in lines:
        if re.search(r"\berror\b", l, re.I):
            return l
    return lines[0] if lines else "(no output)"

def tidy(s):
    return s.replace(tk + "/", "<cuda>/").replace(repo + "/", "")

def check(e):
    rel = os.path.relpath(e["file"], repo)
    log = os.path.join(out, "logs", rel.replace("/", "_") + ".log")
    # A .cu file always includes cuda_runtime.h (nvcc puts it first); a .cpp file is scanned.
    hit, rc, text = (True, 0, "") if e["file"].endswith(".cu") else touches_cuda(e)
    if rc != 0:
        open(log, "w").write(text)
        return rel, "FAIL", "dependency scan with the installed toolkit failed: " + tidy(first_error(text))
    if not hit:
        return rel, None, ""
    if e["file"].endswith(".cu") and not frontend:
        return rel, "SKIP", "no nvcc front end for this version"
    args = retarget(e)
    rc, text = run(args, e["directory"])
    open(log, "w").write(shlex.join(args) + "\n" + text)
    return rel, ("OK" if rc == 0 else "FAIL"), ("" if rc == 0 else tidy(first_error(text)))

with ThreadPoolExecutor(int(os.environ["JOBS"])) as pool:
    results = sorted(r for r in pool.map(check, entries) if r[1])
for rel, status, why in results:
    print(f"{status:4}  {rel}" + (f": {why}" if why else ""))
n = {s: sum(1 for r in results if r[1] == s) for s in ("OK", "FAIL", "SKIP")}
print(f"summary: {len(results)} translation units touch CUDA headers: {n['OK']} OK, {n['FAIL']} FAIL, {n['SKIP']} SKIP"
      f" (of {len(entries)} in the compile database)")
sys.exit(1 if n["FAIL"] else 2 if n["SKIP"] else 0)
PY
