#!/usr/bin/env python3
"""Tests of ts_trace_svg --memory (ctest runs one case per call).

The test recomputes, from the trace's JSON and with its own code (the standard library
only), what the memory chart must say, and compares it with the SVG's data-* attributes:

  chart   per device: the [memory] events of the view, each charged to the innermost op or
          annotation enclosing it on its thread; the allocations and frees counted and summed;
          the blocks allocated before the view and freed in it; the bytes live at the end and
          the peak (the running sum of Bytes from those blocks); one band per allocating op
          with its count and bytes; one tick per event with its op and bytes. The SVG parses
          as XML, two runs give the same bytes. With --expect-peak-rule (and --step) the peak
          must also be what the shapes allocate: the trace's name gives tutorial 05's
          configuration, PEAK_TENSORS the path's count of live [T, H] and [T, D] tensors.
          Without -o the chart goes to the current directory as the trace's name less .json,
          _step<N> with --step, _memory, .svg, and stdout is one "wrote NAME (...)" line
          giving each device's event count and peak; -o - prints the same bytes alone.
  errors  a trace without memory events, a step the trace lacks: exit 1 with one line on
          stderr, no file written, never a crash
  picture a committed picture is what the tool draws today from its committed trace (with
          --memory or not, --step as given), on stdout with -o -
"""
import argparse
import collections
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from decimal import Decimal

SVG_NS = "{http://www.w3.org/2000/svg}"
SCOPE_CATS = {"cpu_op", "user_annotation"}
failures = []

# The peak of one step of tutorial 05's memory lesson, in live tensors of the GeGLU MLP's two
# sizes, [T, H] and [T, D] (T = B * S tokens). In C++ the temporaries of one full expression,
# `down(mul(gelu(gate(x)), up(x)))`, live until it ends, so the forward holds every intermediate
# at once: eager gate(x), up(x), gelu and mul (4 x [T, H]); fused gate(x), up(x) and geglu (3);
# merged [gate; up](x), one [T, 2H], and geglu (3). Its output [T, D] is allocated while the
# previous step's output is still alive (y is reassigned, and the old one freed, after the
# forward returns): 2 x [T, D]. The first forward of a loop has no earlier output: 1 x [T, D].
# path -> (tensors [T, H], tensors [T, D]) at the peak of a step after the loop's first.
PEAK_TENSORS = {"eager": (4, 2), "fused": (3, 2), "merged": (3, 2)}
ELEMENT_BYTES = {"f32": 4, "bf16": 2, "f16": 2}
TYPE_NAMES = {"f32": "float", "bf16": "c10::BFloat16", "f16": "c10::Half"}  # the trace's "Input type"
# The memory traces of tutorial 05 (tutorials/05_memory_and_syncs/lesson1_memory.cpp), steps
# numbered from the loop's first forward:
#   <B>x<S>x<D>x<H>_<dtype>_first_forwards_eager[_nocache]_wait0_warmup0: the process's first
#       forwards (step 0 is the first);
#   <B>x<S>x<D>x<H>_<dtype>_<cold|warm>_memory_<path>[_nocache][_wait<N>_warmup<M>]: a loop of
#       forwards on one path, after --warmup forwards when warm (when cold, step 0 is the first).
TRACE_NAME = re.compile(r"(\d+)x(\d+)x(\d+)x(\d+)_(f32|bf16|f16)_"
                        r"(?:(first_forwards)_eager|(cold|warm)_memory_(eager|fused|merged))(?:_|\.json|$)")


def rule_peak(trace_path, trace, step):
    """The peak PEAK_TENSORS gives the trace's step, from its name, after checking that name against
    the shapes the trace recorded (the MLP's down projection: x [B, S, H], weight [D, H])."""
    m = TRACE_NAME.match(os.path.basename(trace_path))
    if m is None:
        check(False, f"{os.path.basename(trace_path)}: not a name tutorial 05's memory lesson writes")
        return None
    B, S, D, H = (int(g) for g in m.group(1, 2, 3, 4))
    dtype, first_forwards, temperature, path = m.group(5), m.group(6), m.group(7), m.group(8) or "eager"
    down = [[B, S, H], [D, H]]
    linears = [e["args"] for e in trace["traceEvents"] if e.get("cat") == "cpu_op" and e.get("name") == "ts::linear"]
    check(any(a["Input Dims"][:2] == down and a["Input type"][0] == TYPE_NAMES[dtype] for a in linears),
          f"the name says {B}x{S}x{D}x{H} {dtype}, but no ts::linear of the trace has inputs {down} in {dtype}")
    th, td = PEAK_TENSORS[path]
    if step == 0 and (first_forwards or temperature == "cold"):
        td -= 1  # the loop's first forward
    T = B * S
    return (th * T * H + td * T * D) * ELEMENT_BYTES[dtype]


def check(ok, message):
    if not ok:
        failures.append(message)
        print("FAIL:", message)


def ns(us):
    return int((Decimal(us) * 1000).to_integral_value())


def us3(n):
    return f"{Decimal(n) / 1000:.3f}"


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f, parse_float=Decimal)


def expected_charts(trace, step, from_us, to_us):
    events = trace["traceEvents"]
    xs = [e for e in events if e.get("ph") == "X" and e.get("cat") != "Trace"]
    mems = [e for e in events if e.get("ph") == "i" and e.get("name") == "[memory]"]
    if step is not None:
        s = next(e for e in xs if e["name"] == f"ProfilerStep#{step}" and e.get("cat") == "user_annotation")
        origin = lo = ns(s["ts"])
        hi = lo + ns(s["dur"])
    else:
        starts = [ns(e["ts"]) for e in xs] + [ns(m["ts"]) for m in mems]
        ends = [ns(e["ts"]) + ns(e["dur"]) for e in xs] + [ns(m["ts"]) for m in mems]
        origin = lo = min(starts)
        hi = max(ends)
    if from_us is not None:
        lo = origin + ns(Decimal(str(from_us)))
    if to_us is not None:
        hi = origin + ns(Decimal(str(to_us)))
    scopes = [e for e in xs if e.get("cat") in SCOPE_CATS]

    def owner(m):
        """The innermost scope enclosing the event on its thread: the latest start, then the shortest."""
        t = ns(m["ts"])
        around = [e for e in scopes if e["pid"] == m["pid"] and e["tid"] == m["tid"]
                  and ns(e["ts"]) <= t <= ns(e["ts"]) + ns(e["dur"])]
        if not around:
            return "(no scope)"
        return max(around, key=lambda e: (ns(e["ts"]), -ns(e["dur"])))["name"]

    charts = {}
    for m in sorted(mems, key=lambda m: ns(m["ts"])):  # stable: file order among equal times
        if not lo <= ns(m["ts"]) <= hi:
            continue
        a = m["args"]
        device = "cpu" if a["Device Type"] == 0 else f"cuda:{a['Device Id']}"
        charts.setdefault(device, []).append((m, owner(m)))
    out = {}
    for device, evs in charts.items():
        live_addr = set()
        before = 0
        for m, _ in evs:
            b, addr = m["args"]["Bytes"], m["args"]["Addr"]
            if b > 0:
                live_addr.add(addr)
            elif addr in live_addr:
                live_addr.discard(addr)
            else:
                before -= b
        total = peak = before
        bands = collections.OrderedDict()
        for m, op in evs:
            b = m["args"]["Bytes"]
            total += b
            peak = max(peak, total)
            if b > 0:
                n, s = bands.get(op, (0, 0))
                bands[op] = (n + 1, s + b)
        out[device] = {
            "events": len(evs),
            "allocations": sum(1 for m, _ in evs if m["args"]["Bytes"] > 0),
            "allocated": sum(m["args"]["Bytes"] for m, _ in evs if m["args"]["Bytes"] > 0),
            "frees": sum(1 for m, _ in evs if m["args"]["Bytes"] < 0),
            "freed": -sum(m["args"]["Bytes"] for m, _ in evs if m["args"]["Bytes"] < 0),
            "before": before,
            "peak": peak,
            "end": total,
            "bands": bands,
            "ticks": [(op, m["args"]["Bytes"], us3(ns(m["ts"]) - origin)) for m, op in evs],
        }
    return out


def default_name(trace_path, step):
    """The file ts_trace_svg --memory writes without -o, by the rule its --help states."""
    name = os.path.basename(trace_path)
    for suffix in (".json.gz", ".json"):
        if name.endswith(suffix):
            name = name[:-len(suffix)]
            break
    return name + (f"_step{step}" if step is not None else "") + "_memory.svg"


def case_chart(a):
    trace = load(a.trace)
    cmd = [os.path.abspath(a.tool) if os.sep in a.tool else a.tool, "--memory", os.path.abspath(a.trace)]
    if a.step is not None:
        cmd += ["--step", str(a.step)]
    if a.from_us is not None:
        cmd += ["--from-us", str(a.from_us)]
    if a.to_us is not None:
        cmd += ["--to-us", str(a.to_us)]
    piped = cmd + ["-o", "-"]
    with tempfile.TemporaryDirectory() as cwd:
        first = subprocess.run(piped, capture_output=True, cwd=cwd)
        second = subprocess.run(piped, capture_output=True, cwd=cwd)
        check(os.listdir(cwd) == [], f"-o - wrote files: {os.listdir(cwd)}")
    check(first.returncode == 0 and first.stdout.startswith(b"<?xml"),
          f"{piped}: exit {first.returncode}, stdout {first.stdout[:100]!r}: {first.stderr.decode().strip()}")
    if first.returncode != 0 or not first.stdout.startswith(b"<?xml"):
        return
    check(first.stdout == second.stdout, "two runs gave different SVGs")
    check(first.stderr == b"", f"-o -: stderr {first.stderr[:200]!r}")
    root = ET.fromstring(first.stdout)  # raises on XML that does not parse
    check(root.tag == SVG_NS + "svg", f"root element {root.tag}")
    want = expected_charts(trace, a.step, a.from_us, a.to_us)
    # Without -o: the default file in the current directory, the same bytes, one line naming it.
    with tempfile.TemporaryDirectory() as cwd:
        r = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd)
        name = default_name(a.trace, a.step)
        made = sorted(os.listdir(cwd))
        print(f"without -o: exit {r.returncode}, wrote {made}: {r.stdout.strip()[:300]!r}")
        check(r.returncode == 0 and made == [name], f"without -o: exit {r.returncode}, wrote {made}, expected [{name!r}]")
        check(made != [name] or open(os.path.join(cwd, name), "rb").read() == first.stdout,
              f"{name} differs from what -o - printed")
        lines = r.stdout.splitlines()
        check(len(lines) == 1 and lines[0].startswith(f"wrote {name} (memory, ") and lines[0].endswith(")"),
              f"without -o, stdout is {r.stdout[:300]!r}, expected one line 'wrote {name} (memory, ...)'")
        for device, w in want.items():
            events = f"{w['events']} event{'' if w['events'] == 1 else 's'}, peak "
            check(f" {device} {events}" in r.stdout, f"the wrote line does not give {device}'s {events}...")
    charts = {g.get("data-device"): g for g in root.iter(SVG_NS + "g") if g.get("class") == "mem-chart"}
    check(set(charts) == set(want), f"charts for {sorted(charts)}, expected {sorted(want)}")
    for device, w in want.items():
        g = charts.get(device)
        if g is None:
            continue
        got = {k: int(g.get(f"data-{name}")) for k, name in
               [("events", "events"), ("allocations", "allocations"), ("allocated", "allocated-bytes"),
                ("frees", "frees"), ("freed", "freed-bytes"), ("before", "before-bytes"), ("peak", "peak-bytes"),
                ("end", "end-bytes")]}
        for k, v in got.items():
            check(v == w[k], f"{device}: {k} {v}, expected {w[k]}")
        print(f"{device}: {w['events']} events, {w['allocations']} allocations ({w['allocated']} B), "
              f"{w['frees']} frees ({w['freed']} B), before {w['before']} B, peak {w['peak']} B, end {w['end']} B")
        bands = collections.OrderedDict(
            (p.get("data-op"), (int(p.get("data-allocations")), int(p.get("data-bytes"))))
            for p in g.iter(SVG_NS + "path") if p.get("class") == "mem-band"
            and p.get("data-op") != "allocated before the view")
        check(bands == w["bands"], f"{device}: bands {dict(bands)}, expected {dict(w['bands'])}")
        ticks = [(t.get("data-op"), int(t.get("data-bytes")), t.get("data-ts"))
                 for t in g.iter(SVG_NS + "line") if t.get("class") == "mem-ev"]
        check(ticks == w["ticks"], f"{device}: the event ticks differ from the trace's events")
    if a.expect_peak_rule:
        # The MLP's tensors are all on one device: the one chart of the step.
        check(a.step is not None and len(want) == 1,
              f"--expect-peak-rule: a step's peak on one device, got --step {a.step}, devices {sorted(want)}")
        peak = rule_peak(a.trace, trace, a.step) if a.step is not None and len(want) == 1 else None
        if peak is not None:
            device, w = next(iter(want.items()))
            print(f"{device}: the rule's peak {peak} B")
            check(w["peak"] == peak, f"{device}: peak {w['peak']}, the shapes and PEAK_TENSORS give {peak}")


def case_errors(a):
    cases = [
        ([a.tool, "--memory", a.no_memory_trace], "no [memory] events"),
        ([a.tool, "--memory", a.trace, "--step", "999999"], "has no ProfilerStep#999999"),
    ]
    for cmd, text in cases:
        with tempfile.TemporaryDirectory() as cwd:
            cmd = [os.path.abspath(x) if os.sep in x else x for x in cmd]
            r = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd)
            check(r.returncode == 1, f"{cmd}: exit {r.returncode}, expected 1")
            lines = r.stderr.strip().splitlines()
            check(len(lines) == 1 and text in r.stderr, f"{cmd}: stderr {r.stderr!r}, expected one line with {text!r}")
            check(r.stdout == "" and os.listdir(cwd) == [], f"{cmd}: stdout {r.stdout!r}, wrote {os.listdir(cwd)}")


def case_picture(a):
    cmd = [a.tool] + (["--memory"] if a.memory else []) + [a.trace]
    if a.step is not None:
        cmd += ["--step", str(a.step)]
    cmd += ["-o", "-"]
    with tempfile.TemporaryDirectory() as cwd:  # its own directory: a file it writes lands there
        cmd = [os.path.abspath(x) if os.sep in x else x for x in cmd]
        r = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd)
    check(r.returncode == 0, f"{cmd}: exit {r.returncode}: {r.stderr.strip()}")
    with open(a.svg, encoding="utf-8") as f:
        committed = f.read()
    check(r.stdout == committed, f"{a.svg} differs from what {' '.join(cmd)} draws today")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("case", choices=["chart", "errors", "picture"])
    p.add_argument("--tool", required=True)
    p.add_argument("--trace", required=True)
    p.add_argument("--no-memory-trace")
    p.add_argument("--step", type=int)
    p.add_argument("--from-us", type=float)
    p.add_argument("--to-us", type=float)
    p.add_argument("--expect-peak-rule", action="store_true",
                   help="chart: the step's peak must be the one PEAK_TENSORS gives the trace's name")
    p.add_argument("--svg", help="picture: the committed SVG")
    p.add_argument("--memory", action="store_true", help="picture: drawn with --memory")
    a = p.parse_args()
    {"chart": case_chart, "errors": case_errors, "picture": case_picture}[a.case](a)
    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
