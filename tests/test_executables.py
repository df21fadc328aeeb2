#!/usr/bin/env python3
"""Every executable a user runs, given a bad command line or a bad environment, stops with one line
on stderr and exit status 1 or 2: never a signal, never "terminate called", never a traceback.

  tests/test_executables.py --build BUILD_DIR

Each executable runs with a flag it does not have, and with a small real job of its own under each
bad environment variable below. A variable the run does not read (TS_DEVICE_CAPABILITY on a machine
without a GPU) may leave the job to finish: then exit status 0 is fine, and only a failure has to be
one line.

ts_bench and ts_ladder also run their job with a --json file they cannot write: /dev/full (a device,
refused before the job runs) and, where this process may mount a 64 KiB tmpfs (root), a file on
that tmpfs once it is full (the job runs and the lines are lost: No space left on device). Each
must exit 1 or 2 with one line naming the path and the reason, and leave no file behind.
"""
import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile

TUTORIAL_JOBS = {
    "00_tensors_and_views": ["--device", "cpu"],
    "01_matmul_add": ["--device", "cpu", "--size", "8"],
    "02_linear": ["--device", "cpu", "--tokens", "5", "--in", "3", "--out", "2"],
    "03_mlp": ["--device", "cpu", "--batch", "1", "--seq", "3", "--dim", "8", "--hidden", "12"],
    "04_attention": ["--device", "cpu", "--batch", "1", "--heads", "1", "--seq", "5", "--head-dim", "4"],
    "05_memory_and_syncs": ["--device", "cpu", "--batch", "1", "--seq", "4", "--dim", "16", "--hidden", "24",
                            "--timing-rows", "4"],
}
# Environment variables the library reads, each set to a value it must refuse.
BAD_ENVIRONMENTS = [
    {"TS_VARIANT": "no/such/rung"},
    {"TS_VARIANT": "mm/cpu/ref, mm/cpu/nope"},  # one bad name in a list
    {"TS_DEVICE_CAPABILITY": "seven"},
]
# What a run may print on stderr before the line that ends it.
NOTES = ("warning:", "note:", "tensorscope: warning:")


def check(name, argv, env, out_dir, failures, may_succeed, says=()):
    """Runs argv; appends to failures what is wrong with how it stopped (and the words of `says`
    its one line lacks)."""
    try:
        p = subprocess.run(argv, env=env, cwd=out_dir, capture_output=True, text=True, errors="replace",
                           timeout=120)
    except subprocess.TimeoutExpired:
        failures.append(f"{name}: still running after 120 s")
        return
    what = f"{name}: {' '.join(argv[1:])} (env {', '.join(f'{k}={v}' for k, v in env.items() if k.startswith('TS_'))})"
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    if p.returncode < 0:
        failures.append(f"{what}: killed by signal {signal.Signals(-p.returncode).name}")
    elif p.returncode == 0 and may_succeed:
        return
    elif p.returncode not in (1, 2):
        failures.append(f"{what}: exit status {p.returncode}, expected 1 or 2")
    if "terminate called" in p.stderr or "Traceback" in p.stderr:
        failures.append(f"{what}: an uncaught exception: {p.stderr.strip()[:300]}")
    elif p.returncode != 0:
        # One line naming the problem; the warnings and notes a run prints before it may precede it.
        errors = [l for l in lines if not l.startswith(NOTES)]
        if len(errors) != 1 or ": " not in errors[0]:
            failures.append(f"{what}: stderr is not one line naming the problem: {p.stderr.strip()[:300]!r}")
        for words in says:
            if words not in p.stderr:
                failures.append(f"{what}: stderr does not say {words!r}: {p.stderr.strip()[:300]!r}")


class FullTmpfs:
    """A 64 KiB tmpfs on a fresh folder, every block of it taken; `mounted` is False where this
    process may not mount one, and `why` says why."""

    def __init__(self, parent):
        self.dir = os.path.join(parent, "full_tmpfs")
        os.mkdir(self.dir)
        self.why = ""
        if shutil.which("mount") is None or os.geteuid() != 0:
            self.why = "not root, or no mount command"
            self.mounted = False
            return
        p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", self.dir], capture_output=True,
                           text=True)
        self.mounted = p.returncode == 0
        self.why = p.stderr.strip()
        if self.mounted:
            try:
                with open(os.path.join(self.dir, "filler"), "wb", buffering=0) as f:
                    while f.write(b"x" * 1024):
                        pass
            except OSError:
                pass  # ENOSPC: full

    def close(self):
        if self.mounted:
            subprocess.run(["umount", "-l", self.dir], check=False)


def check_json_output(jobs, base, out_dir, failures):
    """ts_bench and ts_ladder with a --json file they cannot write; returns the number of runs."""
    runs = 0
    disk = FullTmpfs(out_dir)
    try:
        targets = [("/dev/full", "it is a character device")]
        if disk.mounted:
            targets.append((os.path.join(disk.dir, "out.jsonl"), "No space left on device"))
        else:
            print(f"test_executables: skipped --json on a full disk: cannot mount a tmpfs ({disk.why}); "
                  f"/dev/full only")
        for exe, job in jobs.items():
            name = os.path.basename(exe)
            if name not in ("ts_bench", "ts_ladder") or not os.access(exe, os.X_OK):
                continue
            for path, reason in targets:
                check(name, [exe] + job + ["--json", path], base, out_dir, failures, may_succeed=False,
                      says=(f"--json {path}: cannot write {path}: {reason}",))
                runs += 1
            if disk.mounted and sorted(os.listdir(disk.dir)) != ["filler"]:
                failures.append(f"{name}: --json on a full disk left {sorted(os.listdir(disk.dir))}")
    finally:
        disk.close()
    return runs


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", required=True)
    args = parser.parse_args()
    build = os.path.abspath(args.build)
    jobs = {os.path.join(build, "tutorials", t): job for t, job in TUTORIAL_JOBS.items()}
    jobs[os.path.join(build, "ts_bench")] = ["--filter", "dispatch/cpu/view_t"]
    jobs[os.path.join(build, "ts_ladder")] = ["--op", "add", "--device", "cpu"]
    trace_tools = [os.path.join(build, t) for t in ("ts_trace_check", "ts_trace_diff", "ts_trace_svg")]
    failures, runs = [], 0
    base = {k: v for k, v in os.environ.items() if not k.startswith("TS_")}
    with tempfile.TemporaryDirectory() as out_dir:
        for exe in list(jobs) + trace_tools:
            name = os.path.basename(exe)
            if not os.access(exe, os.X_OK):
                failures.append(f"{name}: not built in {build}")
                continue
            check(name, [exe, "--no-such-flag"], base, out_dir, failures, may_succeed=False)
            runs += 1
        for exe, job in jobs.items():
            name = os.path.basename(exe)
            extra = ["--out-dir", out_dir] if "/tutorials/" in exe else []
            for bad in BAD_ENVIRONMENTS:
                may_succeed = "TS_DEVICE_CAPABILITY" in bad  # read only where a GPU is
                check(name, [exe] + job + extra, {**base, **bad}, out_dir, failures, may_succeed)
                runs += 1
        runs += check_json_output(jobs, base, out_dir, failures)
    for f in failures:
        print(f"FAIL {f}")
    print(f"test_executables: {runs} runs, {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
