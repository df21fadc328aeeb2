#!/usr/bin/env python3
"""tools/trace_readings.py TRACE.json...: readings of a trace that need no GPU, written beside it.

  <config>.steps.txt    one line per event of each recorded step: the lane (CPU or GPU), its start in
                        us from the step's start on the CPU, its duration, its nesting (indented), its
                        name (cut at 60 characters) and CUPTI correlation; then what follows the last
                        step (the profiler's synchronize), timed from the first step's start
  <config>.kernels.txt  every kernel's durations in us in launch order, with min, median, mean and max

A file is written only when the trace has what it reads (steps; kernels). The refresh scripts
(tools/refresh_walkthroughs.sh, tools/refresh_04_attention.sh) run it on every trace they write.
"""
import json, os, statistics, sys

def readings(path):
    ev = [e for e in json.load(open(path))["traceEvents"] if e.get("ph") == "X"]
    # The host's steps: a step's GPU side (a gpu_user_annotation of the same name) is read within it.
    steps = sorted((e for e in ev if e["name"].startswith("ProfilerStep#") and e["pid"] != 0), key=lambda e: e["ts"])
    inside = lambda a, b: a is not b and b["ts"] <= a["ts"] and a["ts"] + a["dur"] <= b["ts"] + b["dur"]
    out = []
    for s in steps:
        out.append(f"== {s['name']} (times in us from the step's start on the CPU)")
        cpu = [e for e in ev if e["pid"] != 0 and e["cat"] != "Trace" and s["ts"] <= e["ts"] <= s["ts"] + s["dur"]]
        corr = {e["args"]["correlation"] for e in cpu if "correlation" in e["args"]}
        ext = {e["args"]["External id"] for e in cpu if "External id" in e["args"]}
        gpu = [e for e in ev if e["pid"] == 0 and (e["args"].get("correlation") in corr
               or (e["cat"] == "gpu_user_annotation" and e["args"].get("External id") in ext))]
        for lane, evs in (("CPU", cpu), ("GPU", gpu)):
            for e in sorted(evs, key=lambda e: (e["ts"], -e["dur"], e["cat"] != "gpu_user_annotation")):
                depth = sum(inside(e, p) for p in evs) if lane == "CPU" else int(e["cat"] != "gpu_user_annotation")
                c = f'   [correlation {e["args"]["correlation"]}]' if "correlation" in e["args"] else ""
                out.append(f'{lane} {e["ts"] - s["ts"]:9.3f} {e["dur"]:9.3f}  {"  " * depth}{e["name"][:60]}{c}')
    if steps:
        last = steps[-1]
        t0, end = steps[0]["ts"], last["ts"] + last["dur"]
        after = [e for e in ev if e["ts"] >= end or (e["pid"] == 0 and e["ts"] + e["dur"] > end)]
        if after:
            out.append(f"== after {last['name']} (times in us from {steps[0]['name']}'s start)")
            for e in sorted(after, key=lambda e: (e["ts"], -e["dur"])):
                lane = "GPU" if e["pid"] == 0 else "CPU"
                c = f'   [correlation {e["args"]["correlation"]}]' if "correlation" in e.get("args", {}) else ""
                out.append(f'{lane} {e["ts"] - t0:9.3f} {e["dur"]:9.3f}  {e["name"][:60]}{c}')
    kernels = {}
    for e in sorted(ev, key=lambda e: e["ts"]):
        if e.get("cat") == "kernel":
            kernels.setdefault(e["name"], []).append(e["dur"])
    ktext = []
    for name, d in kernels.items():
        ktext.append(f"{name}\n  {len(d)} launches, durations in us in launch order:\n  "
                     + " ".join(f"{x:.3f}" for x in d)
                     + f"\n  min {min(d):.3f}  median {statistics.median(d):.3f}  mean {statistics.mean(d):.3f}"
                       f"  max {max(d):.3f}")
    return out, ktext

for path in sys.argv[1:]:
    steps, kernels = readings(path)
    base = path[:-len(".json")]
    if steps:
        open(base + ".steps.txt", "w").write(f"steps of {path}\n" + "\n".join(steps) + "\n")
    if kernels:
        open(base + ".kernels.txt", "w").write(f"kernels of {path}\n" + "\n".join(kernels) + "\n")
