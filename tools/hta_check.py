#!/usr/bin/env python3
"""tools/hta_check.py: Holistic Trace Analysis (HTA) loads a trace we wrote and finds our ops and steps.

    python3 tools/hta_check.py --tutorial build/dev/tutorials/01_matmul_add [--venv build/dev/hta-venv]
    python3 tools/hta_check.py --trace traces/01_matmul_add/64_bf16_cold_eager.json

With --tutorial it runs tutorial 01 (size 64, f32, CPU) in a scratch directory
and checks the trace it writes. HTA is the PyPI package HolisticTraceAnalysis
(import name `hta`); when it cannot be imported, this script creates a venv
(default: hta-venv beside this script's build, see --venv), installs it there
and runs itself again with that venv's python. A trace HTA cannot load, or in
which it finds no ts:: ops or no ProfilerStep iterations, fails the check.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

HTA_REQUIREMENT = "HolisticTraceAnalysis==0.5.0"
REEXEC_FLAG = "TS_HTA_CHECK_IN_VENV"


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
    if not os.path.exists(python):
        print(f"hta_check: creating {venv}", flush=True)
        if subprocess.run([sys.executable, "-m", "venv", venv]).returncode != 0:
            # No venv module (Debian's python3 without python3-venv): the user site instead.
            print(f"hta_check: no venv; installing {HTA_REQUIREMENT} with pip --user", flush=True)
            if subprocess.run([sys.executable] + pip_install + ["--user"]).returncode != 0:
                sys.exit(f"hta_check: pip could not install {HTA_REQUIREMENT} (is PyPI reachable?)")
            python = sys.executable
    if python != sys.executable and subprocess.run([python, "-c", "import hta"], capture_output=True).returncode != 0:
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


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--trace", help="a Chrome trace (.json or .json.gz) written by tensorscope")
    source.add_argument("--tutorial", help="the 01_matmul_add executable: run it and check its trace")
    parser.add_argument("--venv", default=os.path.join(os.getcwd(), "hta-venv"),
                        help="where to install HTA when it is missing (default: ./hta-venv)")
    args = parser.parse_args()
    ensure_hta(os.path.abspath(args.venv))

    with tempfile.TemporaryDirectory() as workdir:
        trace = args.trace or run_tutorial(os.path.abspath(args.tutorial), workdir)
        errors = check(trace)
    for e in errors:
        print(f"  error: {e}")
    print("OK" if not errors else "FAILED")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
