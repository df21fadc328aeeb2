#!/usr/bin/env python3
"""tools/hta_check.py: Holistic Trace Analysis (HTA) loads a trace we wrote and finds our ops and steps.

    python3 tools/hta_check.py --tutorial build/dev/tutorials/01_matmul_add [--venv build/dev/hta-venv]
    python3 tools/hta_check.py --trace traces/01_matmul_add/64_bf16_cold_eager.json

With --tutorial it runs tutorial 01 (size 64, f32, CPU) in a scratch directory
and checks the trace it writes. HTA is the PyPI package HolisticTraceAnalysis
(import name `hta`); when it cannot be imported, this script creates a venv
(default: hta-venv beside this script's build, see --venv; about 500 MB with
HTA's dependencies), installs it there from PyPI and runs itself again with
that venv's python. A trace HTA cannot load, or in which it finds no ts:: ops
or no ProfilerStep iterations, fails the check.

Without PyPI (no network, no index answering) HTA cannot be installed: the
check then reports itself skipped with the reason and exits 77 (ctest's skip
code for these tests), except under CI (CI=true in the environment), where a
check that cannot run fails.
"""
import argparse
import math
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.request

HTA_REQUIREMENT = "HolisticTraceAnalysis==0.5.0"
REEXEC_FLAG = "TS_HTA_CHECK_IN_VENV"
SKIP_EXIT_CODE = 77


def index_unreachable():
    """None when the package index answers for HTA, else why not (PIP_INDEX_URL is honoured)."""
    index = os.environ.get("PIP_INDEX_URL", "https://pypi.org/simple/")
    url = index.rstrip("/") + "/holistictraceanalysis/"
    try:
        with urllib.request.urlopen(url, timeout=20) as response:
            response.read(1)
        return None
    except Exception as e:  # noqa: BLE001: any failure means the install cannot work
        return f"{url} did not answer ({e})"


def skip_or_fail(reason):
    """Exits: skipped (77) on a developer's machine, failed (1) under CI, where HTA must run."""
    if os.environ.get("CI") == "true":
        sys.exit(f"hta_check: FAILED: {reason}; under CI (CI=true) the HTA check must run")
    print(f"hta_check: skipped: {reason}", flush=True)
    sys.exit(SKIP_EXIT_CODE)


def ensure_hta(venv):
    """Imports hta, or installs it into `venv` and re-runs this script there (never returns then)."""
    try:
        import hta  # noqa: F401

        return
    except ImportError:
        if os.environ.get(REEXEC_FLAG):
            sys.exit(f"hta_check: HTA still cannot be imported from {sys.executable}")
    pip_install = ["-m", "pip", "install", "--quiet", "--disable-pip-version-check", HTA_REQUIREMENT]
    python = os.path.join(venv, "bin", "python")
    installed = os.path.exists(python) and subprocess.run([python, "-c", "import hta"],
                                                          capture_output=True).returncode == 0
    if not installed:
        unreachable = index_unreachable()
        if unreachable:
            skip_or_fail(f"{HTA_REQUIREMENT} cannot be installed: the package index is unreachable: {unreachable}")
    if not os.path.exists(python):
        print(f"hta_check: creating {venv} (HTA and its dependencies take about 500 MB)", flush=True)
        if subprocess.run([sys.executable, "-m", "venv", venv]).returncode != 0:
            # No venv module (Debian's python3 without python3-venv): the user site instead.
            print(f"hta_check: no venv; installing {HTA_REQUIREMENT} with pip --user", flush=True)
            if subprocess.run([sys.executable] + pip_install + ["--user"]).returncode != 0:
                sys.exit(f"hta_check: pip could not install {HTA_REQUIREMENT} (is PyPI reachable?)")
            python = sys.executable
    if python != sys.executable and not installed:
        print(f"hta_check: installing {HTA_REQUIREMENT} into {venv} (from PyPI)", flush=True)
        if subprocess.run([python] + pip_install).returncode != 0:
            sys.exit(f"hta_check: pip could not install {HTA_REQUIREMENT} (is PyPI reachable?)")
    env = dict(os.environ, **{REEXEC_FLAG: "1"})
    os.execve(python, [python, os.path.abspath(__file__)] + sys.argv[1:], env)


def run_tutorial(tutorial, workdir):
    out_dir = os.path.join(workdir, "traces")
    cmd = [tutorial, "--size", "64", "--dtype", "f32", "--device", "cpu", "--active", "3", "--out-dir", out_dir]
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"hta_check: {' '.join(cmd)} failed:\n{result.stdout}{result.stderr}")
    return os.path.join(out_dir, "64_f32_cold_eager.json")


def check(trace_path):
    from hta.trace_analysis import TraceAnalysis

    # HTA loads every trace file of a directory (one per rank): give it ours alone.
    with tempfile.TemporaryDirectory() as trace_dir:
        shutil.copy(trace_path, os.path.join(trace_dir, os.path.basename(trace_path)))
        analyzer = TraceAnalysis(trace_dir=trace_dir)
        ranks = analyzer.t.get_ranks()
        if ranks != [0]:
            return [f"HTA found ranks {ranks}, expected [0]"]
        df = analyzer.t.get_trace(0)
        symbols = analyzer.t.symbol_table.get_sym_table()

    errors = []
    if df is None or len(df) == 0:
        return ["HTA loaded no events"]
    names = df["name"].map(lambda i: symbols[i])
    cats = df["cat"].map(lambda i: symbols[i])
    ops = sorted(set(names[cats == "cpu_op"]))
    steps = sorted(set(n for n in names if n.startswith("ProfilerStep#")))
    iterations = sorted(set(int(i) for i in df["iteration"] if i >= 0))
    print(f"hta_check: HTA loaded {len(df)} events of rank 0 from {trace_path}")
    print(f"  cpu_op: {', '.join(ops)}")
    print(f"  steps: {', '.join(steps)}; iterations HTA assigned: {iterations}")
    for op in ("ts::matmul", "ts::mm", "ts::add"):
        if op not in ops:
            errors.append(f"HTA found no cpu_op {op}")
    # HTA drops the last step by default (it may be incomplete): #2 and #3 of #2..#4 remain.
    for step in ("ProfilerStep#2", "ProfilerStep#3"):
        if step not in steps:
            errors.append(f"HTA found no {step}")
    if not {2, 3} <= set(iterations):
        errors.append(f"HTA assigned iterations {iterations}, expected 2 and 3")
    return errors


def table_self_cuda_total_us(table_path):
    """The "Self CUDA time total: 1.234ms" footer of our table, in microseconds."""
    with open(table_path) as f:
        for line in f:
            if line.startswith("Self CUDA time total:"):
                value = line.split(":", 1)[1].strip()
                for unit, scale in (("ms", 1e3), ("us", 1.0), ("s", 1e6)):
                    if value.endswith(unit):
                        return float(value[: -len(unit)]) * scale
    return None


def check_gpu(trace_path):
    """HTA's kernel breakdown of a GPU trace against the trace's own GPU work and our table's Self CUDA total.

    HTA keeps only the GPU work of steps before the last (it treats the last as incomplete),
    rounds each start up and each end down to whole microseconds (a 1.9 us kernel that starts at
    x.5 counts 1 us, a 0.7 us memset that starts at x.3 counts -1), and its breakdown counts only
    computation kernels unless asked for memory ones (include_memory_kernels=False by default):
    it must equal the same steps' kernels, memcpys and memsets left out, rounded the same way.
    The table (the .txt beside the trace) holds every step: its Self CUDA total must equal the sum
    of all kernel, memcpy and memset durations.
    """
    import json

    from hta.trace_analysis import TraceAnalysis

    with open(trace_path) as f:
        trace = json.load(f)
    events = trace["traceEvents"]
    gpu = [e for e in events if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    launches = {e["args"]["correlation"]: e for e in events
                if e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver")}
    steps = sorted((e["ts"], e["name"]) for e in events if e.get("name", "").startswith("ProfilerStep#"))
    errors = []
    if not gpu:
        return [f"{trace_path} has no GPU work"]
    all_us = sum(e["dur"] for e in gpu)
    last_step_start = steps[-1][0] if len(steps) >= 2 else float("inf")
    kept = [e for e in gpu if e["cat"] == "kernel" and e["args"]["correlation"] in launches
            and launches[e["args"]["correlation"]]["ts"] < last_step_start]
    kept_us = sum(e["dur"] for e in kept)
    kept_rounded_us = sum(math.floor(e["ts"] + e["dur"]) - math.ceil(e["ts"]) for e in kept)

    with tempfile.TemporaryDirectory() as trace_dir:
        shutil.copy(trace_path, os.path.join(trace_dir, os.path.basename(trace_path)))
        analyzer = TraceAnalysis(trace_dir=trace_dir)
        kernel_types, _ = analyzer.get_gpu_kernel_breakdown(visualize=False)
    hta_us = float(kernel_types["sum"].sum())
    print(f"hta_check: HTA kernel breakdown of {trace_path}:")
    print(kernel_types.to_string())
    print(f"  HTA total {hta_us:.3f} us; the trace's kernels in the steps HTA keeps: {kept_us:.3f} us, "
          f"{kept_rounded_us} us rounded as HTA rounds ({len(kept)} kernels); in all steps: {all_us:.3f} us "
          f"({len(gpu)} activities)")
    if abs(hta_us - kept_rounded_us) > 0.5:
        errors.append(f"HTA's kernel breakdown ({hta_us:.3f} us) disagrees with the trace ({kept_rounded_us} us "
                      f"rounded as HTA rounds)")
    table = os.path.splitext(trace_path)[0] + ".txt"
    if os.path.exists(table):
        table_us = table_self_cuda_total_us(table)
        print(f"  our table's Self CUDA time total: {table_us} us")
        if table_us is None:
            errors.append(f"{table} has no Self CUDA time total")
        elif abs(table_us - all_us) > max(0.002 * all_us, 0.01):
            errors.append(f"the table's Self CUDA total ({table_us:.3f} us) disagrees with the trace ({all_us:.3f} us)")
    return errors


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--trace", help="a Chrome trace (.json or .json.gz) written by tensorscope")
    source.add_argument("--tutorial", help="the 01_matmul_add executable: run it and check its trace")
    source.add_argument("--gpu-trace", help="a GPU trace of tutorial 01 (its table .txt beside it): "
                        "HTA's kernel breakdown must agree with the trace and the table's Self CUDA total")
    parser.add_argument("--venv", default=os.path.join(os.getcwd(), "hta-venv"),
                        help="where to install HTA when it is missing (default: ./hta-venv)")
    args = parser.parse_args()
    ensure_hta(os.path.abspath(args.venv))

    if args.gpu_trace:
        errors = check(args.gpu_trace) + check_gpu(args.gpu_trace)
    else:
        with tempfile.TemporaryDirectory() as workdir:
            trace = args.trace or run_tutorial(os.path.abspath(args.tutorial), workdir)
            errors = check(trace)
    for e in errors:
        print(f"  error: {e}")
    print("OK" if not errors else "FAILED")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
