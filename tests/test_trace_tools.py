#!/usr/bin/env python3
"""Tests of ts_trace_svg, ts_trace_diff and tools/render_pictures.sh (ctest runs one case per call).

Each case recomputes what the tool must print from the trace's JSON with its own
code (the standard library only: json, xml.etree, gzip), so that the tool and
the test would have to be wrong the same way to agree:

  svg          one <g class="ev"> per event of the step or the whole trace, the same
               (cat, name) multiset, one <path class="flow"> per launch-to-work pair
               drawn; valid XML; the same bytes twice; under a size bound. Where it goes:
               without -o, into the current directory as the trace's name less .json,
               _step<N> with --step, .svg, and one "wrote NAME (...)" line on stdout that
               counts the events and arrows drawn; -o - gives the same bytes on stdout
               alone; -o PATH writes PATH and names it
  svg-errors   a missing file, JSON that is no trace, a step the trace lacks, an empty
               window, a wrong command line: exit 1 or 2 with one line on stderr that
               names what was wrong, nothing on stdout, no file written, never a crash;
               --help: every option, what it draws, the default output, examples
  diff-self    a trace against itself (and against its gzip copy): no change
  diff-fusion  eager against fused MLP: the gelu and mul kernels vanish, the geglu one appears
  diff-table   the "before" columns equal the table key_averages printed in the same run
  diff-errors  as svg-errors, for ts_trace_diff
  hostile      files no tool wrote (a field of another JSON type, a dur of 1e300, nesting 100000
               deep, gzip bombs, /dev/zero, a FIFO, a directory, a file past TS_TRACE_MAX_BYTES),
               for --tool (ts_trace_check, ts_trace_diff or ts_trace_svg): exit 1, one line on stderr
               naming the file and the problem (the field, the kind of value, the expected one),
               nothing on stdout, no signal, within 20 s; numeric options out of range or not numbers
               (--steps abc, --from-us 1e300, --to-us nan): exit 2 in one line; a trace of 40000
               scopes with a memory event each read (and drawn with --memory) in under 8x the time of
               10000 (linear, not quadratic)
  pictures     render_pictures.sh into a temporary root equals the committed pictures, folder by
               folder (docs/h200-runs/<tutorial>/pictures/), and every picture a page shows exists
  quote        the README's pasted diff is lines of the committed output, and that output
               is what the tool prints today
"""
import argparse
import collections
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from decimal import Decimal

SVG_NS = "{http://www.w3.org/2000/svg}"
GPU_LANE_CATS = {"kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation", "cuda_sync"}
GPU_WORK_CATS = {"kernel", "gpu_memcpy", "gpu_memset"}
CPU_RANGE_CATS = {"cpu_op", "user_annotation", "cuda_runtime", "cuda_driver"}

failures = []


def check(ok, message):
    if not ok:
        failures.append(message)
        print("FAIL:", message)


def ns(us):
    """Microseconds (read as Decimal, exact) to integer nanoseconds."""
    return int((Decimal(us) * 1000).to_integral_value())


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f, parse_float=Decimal)


def durations(trace):
    return [e for e in trace["traceEvents"] if e.get("ph") == "X"]


def run(cmd, cwd=None):
    return subprocess.run(cmd, capture_output=True, text=True, cwd=cwd)


def run_bytes(cmd, cwd=None):
    return subprocess.run(cmd, capture_output=True, cwd=cwd)


# ---- ts_trace_svg -------------------------------------------------------------------


def expected_events(trace, step, from_us, to_us):
    """The events ts_trace_svg must draw, by the rule in its header, and time 0."""
    xs = [e for e in durations(trace) if e.get("cat") != "Trace"]
    if step is None:
        chosen = xs
        origin = min(ns(e["ts"]) for e in chosen)
    else:
        s = next(e for e in xs if e["name"] == f"ProfilerStep#{step}")
        origin, end = ns(s["ts"]), ns(s["ts"]) + ns(s["dur"])
        cpu = [e for e in xs if e["cat"] not in GPU_LANE_CATS and origin <= ns(e["ts"])
               and ns(e["ts"]) + ns(e["dur"]) <= end
               and (e is s or not e["name"].startswith("ProfilerStep#"))]
        launches = {e["args"]["correlation"] for e in cpu if "correlation" in e.get("args", {})}
        annotations = {e["args"]["External id"] for e in cpu
                       if e["cat"] == "user_annotation" and "External id" in e.get("args", {})}
        gpu = [e for e in xs if (e["cat"] == "gpu_user_annotation" and e["args"].get("External id") in annotations)
               or (e["cat"] in GPU_LANE_CATS - {"gpu_user_annotation"} and e["args"].get("correlation") in launches)]
        chosen = cpu + gpu
    last = max([origin] + [ns(e["ts"]) + ns(e["dur"]) for e in chosen])
    lo = origin + (ns(Decimal(str(from_us))) if from_us is not None else 0)
    hi = origin + ns(Decimal(str(to_us))) if to_us is not None else last
    return [e for e in chosen if ns(e["ts"]) <= hi and ns(e["ts"]) + ns(e["dur"]) >= lo], lo, hi


def default_svg_name(trace_path, step, memory=False):
    """The file ts_trace_svg writes without -o, by the rule its --help states."""
    name = os.path.basename(trace_path)
    for suffix in (".json.gz", ".json"):
        if name.endswith(suffix):
            name = name[:-len(suffix)]
            break
    return name + (f"_step{step}" if step is not None else "") + ("_memory" if memory else "") + ".svg"


def check_outputs(cmd, trace_path, step, memory=False):
    """Runs cmd (a drawing without -o) three ways: the default file, -o -, -o PATH. Returns the SVG's
    bytes and the wrote line, or (None, None) when the default run failed."""
    with tempfile.TemporaryDirectory() as tmp:
        default_dir, stdout_dir = os.path.join(tmp, "default"), os.path.join(tmp, "stdout")
        os.mkdir(default_dir)
        os.mkdir(stdout_dir)
        r = run(cmd, cwd=default_dir)
        check(r.returncode == 0, f"{cmd}: exit {r.returncode}: {r.stderr.strip()}")
        if r.returncode != 0:
            return None, None
        name = default_svg_name(trace_path, step, memory)
        made = sorted(os.listdir(default_dir))
        print(f"without -o: wrote {made}; stdout {r.stdout.strip()[:300]!r}")
        check(made == [name], f"without -o it wrote {made} in the current directory, expected [{name!r}]")
        lines = r.stdout.splitlines()
        check(len(lines) == 1 and lines[0].startswith(f"wrote {name} (") and lines[0].endswith(")"),
              f"without -o, stdout is {r.stdout[:300]!r}, expected one line 'wrote {name} (...)'")
        check(r.stderr == "", f"without -o, stderr is {r.stderr!r}")
        path = os.path.join(default_dir, name)
        svg = open(path, "rb").read() if os.path.exists(path) else b""
        piped = run_bytes(cmd + ["-o", "-"], cwd=stdout_dir)
        check(piped.returncode == 0, f"-o -: exit {piped.returncode}")
        check(piped.stdout == svg, f"-o - printed {len(piped.stdout)} bytes, not the {len(svg)} bytes of {name}")
        check(piped.stderr == b"", f"-o -: stderr {piped.stderr[:200]!r}")
        check(os.listdir(stdout_dir) == [], f"-o - wrote files: {os.listdir(stdout_dir)}")
        chosen = os.path.join(tmp, "chosen.svg")
        named = run(cmd + ["-o", chosen])
        check(named.returncode == 0 and named.stdout.startswith(f"wrote {chosen} ("),
              f"-o {chosen}: exit {named.returncode}, stdout {named.stdout!r}")
        check(os.path.exists(chosen) and open(chosen, "rb").read() == svg, f"-o {chosen} differs from {name}")
        if made != [name]:
            return None, None
        return svg, lines[0] if lines else ""


def tool_path(tool):
    """The tool as an absolute path, for runs in another directory (a bare name is looked up on PATH)."""
    return os.path.abspath(tool) if os.sep in tool else tool


def case_svg(a):
    a.tool = tool_path(a.tool)
    trace = load(a.trace)
    cmd = [a.tool, os.path.abspath(a.trace)]
    if a.step is not None:
        cmd += ["--step", str(a.step)]
    if a.from_us is not None:
        cmd += ["--from-us", str(a.from_us)]
    if a.to_us is not None:
        cmd += ["--to-us", str(a.to_us)]
    svg, wrote = check_outputs(cmd, a.trace, a.step)
    if svg is None:
        return
    second = run_bytes(cmd + ["-o", "-"])
    check(svg == second.stdout, "two runs gave different SVGs")
    size = len(svg)
    print(f"svg: {size} bytes")
    check(size <= a.max_bytes, f"the SVG is {size} bytes, more than {a.max_bytes}")
    root = ET.fromstring(svg)  # raises on XML that does not parse
    check(root.tag == SVG_NS + "svg", f"root element {root.tag}")
    boxes = [g for g in root.iter(SVG_NS + "g") if g.get("class") == "ev"]
    want, lo, hi = expected_events(trace, a.step, a.from_us, a.to_us)
    print(f"svg: {len(boxes)} event boxes, expected {len(want)}")
    check(len(boxes) == len(want), f"{len(boxes)} event boxes, expected {len(want)}")
    got = collections.Counter((g.get("data-cat"), g.get("data-name")) for g in boxes)
    exp = collections.Counter((e["cat"], e["name"]) for e in want)
    check(got == exp, f"boxes differ from the events: extra {got - exp}, missing {exp - got}")
    for g in boxes:
        check(g.find(SVG_NS + "rect") is not None, f"box {g.get('data-name')} has no rect")
    # Flows: an ac2g pair whose launch and GPU work are both drawn (same correlation, the flow's ends in view).
    # A flow's id is its correlation, plus k * 2^32 for the k-th piece of work of one launch (a CUDA graph's).
    drawn = {(json.dumps(e["pid"]), json.dumps(e["tid"]), e["args"]["correlation"])
             for e in want if "correlation" in e.get("args", {})}
    ends = collections.defaultdict(dict)
    for e in trace["traceEvents"]:
        if e.get("ph") in ("s", "f") and e.get("cat") == "ac2g":
            ends[e["id"]][e["ph"]] = e
    flows = sum(1 for i, pair in ends.items() if "s" in pair and "f" in pair
                and (json.dumps(pair["s"]["pid"]), json.dumps(pair["s"]["tid"]), i & 0xFFFFFFFF) in drawn
                and (json.dumps(pair["f"]["pid"]), json.dumps(pair["f"]["tid"]), i & 0xFFFFFFFF) in drawn
                and all(lo <= ns(pair[k]["ts"]) <= hi for k in "sf"))
    arrows = [p for p in root.iter(SVG_NS + "path") if p.get("class") == "flow"]
    print(f"svg: {len(arrows)} flow arrows, expected {flows}")
    check(len(arrows) == flows, f"{len(arrows)} flow arrows, expected {flows}")
    scope = f"ProfilerStep#{a.step}" if a.step is not None else "whole trace"
    events = f"{len(want)} event{'' if len(want) == 1 else 's'} on "
    arrows = f", {flows} flow arrow{'' if flows == 1 else 's'})"
    check(f"(timeline, {scope}, " in wrote and events in wrote and wrote.endswith(arrows),
          f"the wrote line {wrote!r} does not say: timeline, {scope}, {events}..., {arrows}")


def expect_clean_failure(cmd, what, mentions=(), cwd=None):
    """Exit 1 or 2, one line on stderr naming each of `mentions`, nothing on stdout."""
    r = run(cmd, cwd=cwd)
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    print(f"{what}: exit {r.returncode}: {r.stderr.strip()}")
    check(r.returncode in (1, 2), f"{what}: exit {r.returncode} (a crash is negative or > 2), expected 1 or 2")
    check(len(lines) == 1, f"{what}: stderr is {len(lines)} lines, expected one: {lines}")
    check(r.stdout == "", f"{what}: printed on stdout: {r.stdout[:200]!r}")
    for word in mentions:
        check(word in r.stderr, f"{what}: the error does not name {word!r}: {r.stderr.strip()!r}")


def bad_inputs(tmp):
    """Files that are not usable traces, by what is wrong with them."""
    files = {}

    def put(name, text, compress=False):
        path = os.path.join(tmp, name)
        with (gzip.open(path, "wt") if compress else open(path, "w")) as f:
            f.write(text)
        files[name] = path

    put("not_json.json", "this is not JSON\n")
    put("object.json", json.dumps({"name": "a config file", "values": [1, 2, 3]}))
    put("list.json", json.dumps([1, 2, 3]))
    put("events_not_list.json", json.dumps({"traceEvents": {"ph": "X"}}))
    put("string_ts.json", json.dumps({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1,
                                                        "ts": "soon", "dur": 1}]}))
    put("negative_dur.json", json.dumps({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1,
                                                          "tid": 1, "ts": 1, "dur": -1}]}))
    put("odd_types.json", json.dumps({"traceEvents": [{"ph": "M", "name": 7, "pid": 1, "tid": 1, "args": "x"},
                                                      {"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1,
                                                       "ts": 1, "dur": 1, "args": {"External id": "seven"}}]}))
    put("garbage.json.gz", "{\"traceEvents\": [", compress=True)
    files["missing.json"] = os.path.join(tmp, "missing.json")
    files["directory"] = tmp
    return files


# Every option ts_trace_svg takes, as its usage line spells it.
SVG_OPTIONS = ["--memory", "--step N", "--from-us A", "--to-us B", "-o OUT.svg", "-o -", "-h", "--help"]


def case_svg_errors(a):
    a.tool = tool_path(a.tool)
    trace = os.path.abspath(a.trace)
    with tempfile.TemporaryDirectory() as tmp, tempfile.TemporaryDirectory() as cwd:
        for name, path in bad_inputs(tmp).items():
            expect_clean_failure([a.tool, path], f"ts_trace_svg {name}", cwd=cwd)
        cases = [
            (["--step", "99"], "--step 99", ["ProfilerStep#99"]),
            (["--step", "three"], "--step three", ["--step", "'three'", "whole number"]),
            (["--from-us", "50", "--to-us", "10"], "empty window", ["empty view"]),
            (["--to-us"], "--to-us without a value", ["--to-us", "needs a value"]),
            (["--step"], "--step without a value", ["--step", "needs a value"]),
            (["-o"], "-o without a value", ["-o", "needs a value"]),
            (["-o", ""], "-o ''", ["-o", "file name"]),
            (["--from-us", "soon"], "--from-us soon", ["--from-us", "'soon'", "microseconds"]),
            (["--bogus"], "--bogus", ["unknown option '--bogus'", "--help"]),
            ([trace], "two traces", ["one trace at a time"]),
            (["-o", "/nonexistent-dir/x.svg"], "unwritable output", ["cannot write /nonexistent-dir/x.svg"]),
        ]
        for extra, what, mentions in cases:
            expect_clean_failure([a.tool, trace] + extra, f"ts_trace_svg {what}", mentions, cwd=cwd)
        expect_clean_failure([a.tool], "ts_trace_svg without a trace", ["no trace given"], cwd=cwd)
        expect_clean_failure([a.tool, "--step", "3"], "ts_trace_svg --step 3 without a trace", ["no trace given"], cwd=cwd)
        check(os.listdir(cwd) == [], f"a failed run wrote {os.listdir(cwd)} in the current directory")

        # --help: usage, what it draws, every option with its default, the default output file, examples.
        r = run([a.tool, "--help"], cwd=cwd)
        print(f"--help: exit {r.returncode}, {len(r.stdout.splitlines())} lines")
        check(r.returncode == 0 and r.stderr == "", f"--help: exit {r.returncode}, stderr {r.stderr!r}")
        check(r.stdout.startswith("usage: ts_trace_svg "), "--help does not start with the usage line")
        usage = r.stdout.splitlines()[0] if r.stdout else ""
        lines = r.stdout.splitlines()
        if "options:" in lines:
            lines = lines[lines.index("options:"):]  # the options' entries, then the rest
        check("options:" in r.stdout, "--help has no 'options:' section")
        described = [line.strip() for line in lines if line.startswith("  -") or line.startswith("  TRACE")]
        for option in SVG_OPTIONS:
            check(option.split()[0] in usage or option in ("-h", "--help"), f"the usage line lacks {option}")
            check(any(line.startswith(option) or line.startswith(f"-h, {option}") or f" {option} " in line
                      for line in described), f"--help describes no option {option!r}")
        for option in ["--memory", "--step N", "--from-us A", "--to-us B", "-o OUT.svg"]:
            # The option's entry: its line under "options:" and the indented lines that continue it.
            at = next((i for i, line in enumerate(lines) if line.startswith("  " + option)), None)
            entry = []
            if at is not None:
                entry = [lines[at]]
                for line in lines[at + 1:]:
                    if not line.startswith("    "):
                        break
                    entry.append(line)
            check("default" in " ".join(entry), f"--help gives no default for {option}: {entry}")
        for words in ["timeline", "[memory]", "_step<N>", "_memory", ".svg", "current directory", "wrote",
                      "stdout", "examples:"]:
            check(words in r.stdout, f"--help does not mention {words!r}")
        examples = [line for line in r.stdout.splitlines() if line.startswith("  ts_trace_svg ")]
        check(len(examples) >= 2, f"--help has {len(examples)} examples, expected two or more")
        check(os.listdir(cwd) == [], f"--help wrote {os.listdir(cwd)}")


# ---- ts_trace_diff ------------------------------------------------------------------

ROW = re.compile(r"^\s*(\S+)\s+(\S+)\s+(-?[\d.]+)\s+(-?[\d.]+)\s+(-?[\d.]+)\s+(\S+)\s+(-?[\d.]+)\s+(-?[\d.]+)\s+"
                 r"(-?[\d.]+)\s+(\S+)\s+(\S+)\s+(.*)$")


# The same rows when neither trace has device activity: the tool leaves the Self CUDA columns out.
ROW_CPU = re.compile(r"^\s*(\S+)\s+(\S+)\s+(-?[\d.]+)\s+(-?[\d.]+)\s+(-?[\d.]+)\s+(\S+)\s+(\S+)\s+(.*)$")


def diff_rows(text):
    """{(kind, name): fields} from ts_trace_diff's table (Self CUDA 0 when it prints no such columns)."""
    rows = {}
    cpu_only = "no Self CUDA columns" in text
    zero = Decimal(0)
    for line in text.splitlines():
        m = (ROW_CPU if cpu_only else ROW).match(line)
        if not m or m.group(1) == "calls":
            continue
        f = m.groups()
        if cpu_only:
            rows[(f[6], f[7])] = {"calls": (float(f[0]), float(f[1])), "cpu": (Decimal(f[2]), Decimal(f[3])),
                                  "d_cpu": Decimal(f[4]), "cuda": (zero, zero), "d_cuda": zero}
        else:
            rows[(f[10], f[11])] = {"calls": (float(f[0]), float(f[1])), "cpu": (Decimal(f[2]), Decimal(f[3])),
                                    "d_cpu": Decimal(f[4]), "cuda": (Decimal(f[6]), Decimal(f[7])),
                                    "d_cuda": Decimal(f[8])}
    return rows


def section(text, title):
    """The indented lines under 'appeared ...:' or 'vanished ...:'."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(title))
    out = []
    for line in lines[start + 1:]:
        if not line.startswith("  "):
            break
        kind, name = line.strip().split(None, 1)
        out.append((kind, name))
    return out


def case_diff_self(a):
    for extra in ([], ["--steps"]):
        r = run([a.tool, a.trace, a.trace] + extra)
        check(r.returncode == 0, f"diff of a trace with itself {extra}: exit {r.returncode}: {r.stderr.strip()}")
        rows = diff_rows(r.stdout)
        print(f"diff-self {extra}: {len(rows)} rows")
        check(len(rows) > 0, "no rows parsed")
        for key, row in rows.items():
            check(row["d_cpu"] == 0 and row["d_cuda"] == 0 and row["calls"][0] == row["calls"][1],
                  f"{key} changed: {row}")
        check("no change: every row has the same calls" in r.stdout, "no 'no change' line")
        check("appeared (after only): none" in r.stdout and "vanished (before only): none" in r.stdout,
              "rows appeared or vanished")
    with tempfile.TemporaryDirectory() as tmp:  # the same trace, gzip-compressed
        gz = os.path.join(tmp, os.path.basename(a.trace) + ".gz")
        with open(a.trace, "rb") as src, gzip.open(gz, "wb") as dst:
            shutil.copyfileobj(src, dst)
        r = run([a.tool, a.trace, gz])
        check(r.returncode == 0 and "no change:" in r.stdout, f"plain against gzip: exit {r.returncode}, {r.stderr}")


def case_diff_fusion(a):
    r = run([a.tool, a.before, a.after])
    check(r.returncode == 0, f"exit {r.returncode}: {r.stderr.strip()}")
    vanished, appeared = section(r.stdout, "vanished"), section(r.stdout, "appeared")
    print("vanished:", vanished)
    print("appeared:", appeared)
    kernels_gone = [n for k, n in vanished if k == "kernel"]
    kernels_new = [n for k, n in appeared if k == "kernel"]
    check(any("GeluTanhOp" in n for n in kernels_gone), "the gelu kernel did not vanish")
    check(any("MulOp" in n for n in kernels_gone), "the mul kernel did not vanish")
    check(len(kernels_gone) == 2, f"{len(kernels_gone)} kernels vanished, expected 2")
    check(len(kernels_new) == 1 and "geglu" in kernels_new[0], f"appeared kernels: {kernels_new}")
    check(("cpu_op", "ts::gelu") in vanished and ("cpu_op", "ts::mul") in vanished, "ts::gelu/ts::mul did not vanish")
    check(("cpu_op", "ts::geglu") in appeared, "ts::geglu did not appear")
    rows = diff_rows(r.stdout)
    # Largest absolute change first.
    changes = [max(abs(row["d_cpu"]), abs(row["d_cuda"])) for row in rows.values()]
    check(changes == sorted(changes, reverse=True), "rows are not sorted by the largest absolute change")
    # The vanished kernels' "before" is the table's; their "after" is zero.
    for key in [("kernel", n) for n in kernels_gone]:
        check(rows[key]["cuda"][1] == 0 and rows[key]["cuda"][0] > 0, f"{key}: {rows[key]}")


UNITS = {"us": Decimal(1), "ms": Decimal(1000), "s": Decimal(1000000)}


def table_time(text):
    """A table time ("50.488us", "3.195ms") as (microseconds, the unit it was printed in)."""
    m = re.fullmatch(r"(-?[\d.]+)(us|ms|s)", text)
    return Decimal(m.group(1)) * UNITS[m.group(2)], m.group(2)


def same_time(us, printed):
    """`us` rounded the way the table printed `printed` (three decimals in its unit)."""
    value, unit = printed
    return (us / UNITS[unit]).quantize(Decimal("0.001")) == (value / UNITS[unit]).quantize(Decimal("0.001"))


def table_rows(path):
    """The rows of a key_averages table: [(name, self_cpu, cpu_total, self_cuda, calls)], times as table_time."""
    lines = open(path).read().splitlines()
    header = next(line for line in lines if line.strip().startswith("Name"))
    columns = re.split(r"\s{2,}", header.strip())
    rows = []
    for line in lines:
        fields = re.split(r"\s{2,}", line.strip())
        if len(fields) != len(columns) or fields[0] == "Name" or line.startswith("-"):
            continue
        f = dict(zip(columns, fields))
        rows.append((f["Name"], table_time(f["Self CPU"]), table_time(f["CPU total"]),
                     table_time(f["Self CUDA"]) if "Self CUDA" in f else (Decimal(0), "us"), int(f["# of Calls"])))
    return rows


def case_diff_table(a):
    r = run([a.tool, a.trace, a.trace])
    check(r.returncode == 0, f"exit {r.returncode}: {r.stderr.strip()}")
    rows = diff_rows(r.stdout)
    table = table_rows(a.table)
    matched = 0
    taken = set()
    for name, self_cpu, cpu_total, self_cuda, calls in table:
        def same_name(n):
            return n == name or (name.endswith("...") and len(n) > len(name) - 3 and n.startswith(name[:-3]))
        candidates = [(k, v) for k, v in rows.items() if same_name(k[1])]
        gpu_row = cpu_total[0] == 0 and self_cpu[0] == 0
        candidates = [(k, v) for k, v in candidates if (k[0] in GPU_WORK_CATS) == gpu_row]
        if not candidates:
            # The table's GPU twin of an annotation (gpu_user_annotation) is no row of the diff.
            check(gpu_row, f"table row {name} has no row in the diff")
            continue
        # Two kernels whose names share the table's first characters are two rows cut to the same
        # name: each table row takes the one diff row whose numbers it has.
        fits = [(k, v) for k, v in candidates if k not in taken and v["calls"][0] == calls and
                same_time(v["cpu"][0], self_cpu) and same_time(v["cuda"][0], self_cuda)]
        (key, row) = fits[0] if len(candidates) > 1 and fits else candidates[0]
        check(len(candidates) == 1 or fits, f"table row {name}: {len(candidates)} diff rows of that name, none with its numbers")
        taken.add(key)
        matched += 1
        check(same_time(row["cpu"][0], self_cpu), f"{key}: Self CPU {row['cpu'][0]}, table {self_cpu}")
        check(same_time(row["cuda"][0], self_cuda), f"{key}: Self CUDA {row['cuda'][0]}, table {self_cuda}")
        check(row["calls"][0] == calls, f"{key}: calls {row['calls'][0]}, table {calls}")
    print(f"diff-table: {matched} table rows matched, the diff has {len(rows)}")
    check(matched == len(rows), f"{len(rows)} diff rows but {matched} matched a table row")
    totals = re.findall(r"^(Self C\w+ time total): (\S+)$", open(a.table).read(), re.M)
    wanted = 1 if "no Self CUDA columns" in r.stdout else 2  # Self CPU, and Self CUDA when there is device activity
    check(len(totals) == wanted, f"{a.table}: {len(totals)} footer totals, {wanted} expected")
    for label, printed in totals:
        m = re.search(rf"^{label}:\s+([\d.]+) ->", r.stdout, re.M)
        check(m is not None and same_time(Decimal(m.group(1)), table_time(printed)),
              f"{label}: diff {m and m.group(1)}, table {printed}")


def case_diff_errors(a):
    with tempfile.TemporaryDirectory() as tmp:
        for name, path in bad_inputs(tmp).items():
            expect_clean_failure([a.tool, path, a.trace], f"ts_trace_diff {name} (before)")
            expect_clean_failure([a.tool, a.trace, path], f"ts_trace_diff {name} (after)")
        no_steps = os.path.join(tmp, "no_steps.json")
        with open(no_steps, "w") as f:
            json.dump({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "ts::add", "pid": 1, "tid": 1,
                                        "ts": 1.0, "dur": 2.0, "args": {"External id": 1}}]}, f)
        r = run([a.tool, no_steps, no_steps])
        check(r.returncode == 0 and "no change:" in r.stdout, f"a trace without steps: exit {r.returncode}")
        expect_clean_failure([a.tool, no_steps, a.trace, "--steps"], "ts_trace_diff --steps without steps")
    expect_clean_failure([a.tool, a.trace], "ts_trace_diff with one trace")
    expect_clean_failure([a.tool, a.trace, a.trace, "--bogus"], "ts_trace_diff --bogus")


# ---- hostile files: every tool ends in one line, never a signal -------------------------

# What a checked field must be, in the words of the tools' errors ("event 0: "ts" is a string,
# expected a number").
EXPECTED_TYPE = {"ts": "a number", "dur": "a number", "name": "a string", "args": "an object", "id": "an integer",
                 "args.correlation": "an integer", "args.External id": "an integer"}


def json_kind(value):
    """A JSON value's kind as the errors name it."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, list):
        return "a list"
    return "an object" if isinstance(value, dict) else "null"


def event(**fields):
    e = {"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1, "args": {"External id": 1}}
    e.update(fields)
    return e


def hostile_inputs(tmp):
    """Files no tool wrote: {name: (path, environment, words its one-line error must hold)}. The words are
    recomputed here from what each file does wrong (the field, the kind of value put there)."""
    files = {}
    mib = 1 << 20

    def write(name, data, env=None, words=()):
        path = os.path.join(tmp, name)
        with (gzip.open(path, "wb", compresslevel=1) if name.endswith(".gz") else open(path, "wb")) as f:
            for chunk in data:
                f.write(chunk.encode() if isinstance(chunk, str) else chunk)
        files[name] = (path, env or {}, [path] + list(words))

    def wrong_type(name, events, index, field, value):
        """events[index] gets `value` in `field` ("args.correlation": inside args)."""
        target = events[index]
        if "." in field:
            outer, inner = field.split(".", 1)
            target = target.setdefault(outer, {})
            field_in = inner
        else:
            field_in = field
        target[field_in] = value
        write(name, [json.dumps({"traceEvents": events})],
              words=[f'event {index}: "{field}" is {json_kind(value)}, expected {EXPECTED_TYPE[field]}'])

    wrong_type("ts_string.json", [event()], 0, "ts", "12")
    wrong_type("name_number.json", [event()], 0, "name", 5)
    wrong_type("args_list.json", [event()], 0, "args", [])
    wrong_type("correlation_string.json", [event(cat="kernel", pid=0, tid=7)], 0, "args.correlation", "1")
    flows = [event(cat="cuda_runtime", name="cudaLaunchKernel", args={"correlation": 1}),
             {"ph": "s", "cat": "ac2g", "name": "ac2g", "id": 1, "pid": 1, "tid": 1, "ts": 1},
             {"ph": "f", "cat": "ac2g", "name": "ac2g", "id": 1, "pid": 0, "tid": 7, "ts": 2, "bp": "e"},
             event(cat="kernel", name="k", pid=0, tid=7, ts=2, args={"correlation": 1})]
    wrong_type("flow_id_string.json", flows, 1, "id", "1")
    # A duration no clock gives: refused (the drawing's arithmetic would overflow), not drawn.
    write("dur_huge.json", [json.dumps({"traceEvents": [event(dur=1e300), event(ts=5)]})],
          words=['event 0: "dur" is 1e+300, out of range'])
    # Nesting 100000 deep: the whole file, and one event's args.
    depth = 100_000
    write("deep.json", ["[" * depth, "]" * depth], words=["nested deeper than"])
    write("deep_args.json", ['{"traceEvents": [{"ph": "X", "args": ', "[" * depth, "]" * depth, "}]}"],
          words=["nested deeper than"])
    # Gzip bombs. Zeros: not JSON from the first byte. A string, or a run of spaces, longer than any
    # trace holds: stopped at 16 MiB. Small events past the inflated-size limit (lowered to 1 MB here).
    write("zeros.json.gz", [bytes(mib)] * 64, words=["not valid JSON"])
    write("string_bomb.json.gz", ['{"traceEvents": [{"ph": "X", "name": "'] + ["a" * mib] * 20,
          words=["more than 16 MiB without a complete string or number"])
    write("spaces_bomb.json.gz", ['{"traceEvents": ['] + [" " * mib] * 20,
          words=["more than 16 MiB without a complete string or number"])
    write("events_bomb.json.gz", ['{"traceEvents": ['] + ['{"ph": "i", "ts": 1},' * 50_000] * 8,
          env={"TS_TRACE_MAX_BYTES": "1000000"}, words=["more than 1000000 bytes once inflated", "TS_TRACE_MAX_BYTES"])
    # A parse error after a long run: the error quotes what the parser last read, cut to a line.
    write("spaces_then_garbage.json", ['{"traceEvents": [', " " * (4 * mib), "x]}"], words=["not valid JSON"])
    write("too_big.json", ['{"traceEvents": [', '{"ph": "i", "ts": 1},' * 100_000, '{}]}'],
          env={"TS_TRACE_MAX_BYTES": "1000000"}, words=["more than 1000000 bytes", "TS_TRACE_MAX_BYTES"])
    # Not regular files: a character device that never ends, a FIFO nobody writes, a directory.
    files["dev_zero"] = ("/dev/zero", {}, ["/dev/zero", "a character device", "regular file"])
    fifo = os.path.join(tmp, "fifo.json")
    os.mkfifo(fifo)
    files["fifo"] = (fifo, {}, [fifo, "a FIFO", "regular file"])
    folder = os.path.join(tmp, "folder.json")
    os.mkdir(folder)
    files["directory"] = (folder, {}, [folder, "a directory", "regular file"])
    return files


def memory_heavy_trace(path, scopes):
    """One thread of `scopes` ops in a row, each allocating a block: as many [memory] events as ops and
    every op a scope of the chart (finding each event's scope, and each scope's row, took time
    quadratic in them)."""
    events = []
    for k in range(scopes):
        t = 10.0 * k
        events.append({"ph": "X", "cat": "cpu_op", "name": "ts::empty", "pid": 1, "tid": 1, "ts": t, "dur": 8.0,
                       "args": {"External id": k}})
        events.append({"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 1, "tid": 1,
                       "ts": t + 1.0, "args": {"Bytes": 4096, "Addr": 4096 * k, "Device Type": 0, "Device Id": -1}})
    with open(path, "w") as f:
        json.dump({"traceEvents": events}, f)
    return scopes


def timed_run(cmd, env=None, limit=60, cwd=None):
    """(the CompletedProcess or None past `limit` seconds, the seconds it ran)."""
    start = time.monotonic()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, **(env or {})), timeout=limit,
                           cwd=cwd)
    except subprocess.TimeoutExpired:
        return None, limit
    return r, time.monotonic() - start


def case_hostile(a):
    tool = tool_path(a.tool)
    which = os.path.basename(tool)  # ts_trace_check, ts_trace_diff or ts_trace_svg
    good = os.path.abspath(a.trace)
    max_seconds = 20

    def refused(cmd, env, what, status, words):
        """cmd stops with `status` (1: a trace it cannot read, 2: a wrong command line), one line on
        stderr that holds every word of `words`, nothing on stdout, within max_seconds."""
        r, seconds = timed_run(cmd, env, limit=max_seconds, cwd=cwd)
        check(r is not None, f"{what}: still running after {max_seconds} s")
        if r is None:
            return
        lines = [line for line in r.stderr.splitlines() if line.strip()]
        print(f"{what}: exit {r.returncode} in {seconds:.2f} s: {r.stderr.strip()[:300]}")
        check(r.returncode == status, f"{what}: exit {r.returncode} (negative: a signal), expected {status}")
        check(len(lines) == 1, f"{what}: stderr is {len(lines)} lines, expected one: {lines[:3]}")
        check(len(r.stderr) < 1000, f"{what}: the error line is {len(r.stderr)} characters long")
        check(r.stdout == "", f"{what}: printed on stdout: {r.stdout[:200]!r}")
        for word in words:
            check(word in r.stderr, f"{what}: the error does not say {word!r}: {r.stderr.strip()[:300]!r}")
    with tempfile.TemporaryDirectory() as tmp, tempfile.TemporaryDirectory() as cwd:
        for name, (path, env, words) in hostile_inputs(tmp).items():
            if which == "ts_trace_check":
                runs = [[tool, path]]
            elif which == "ts_trace_diff":
                runs = [[tool, path, good], [tool, good, path]]
            else:
                runs = [[tool, path, "-o", "-"], [tool, "--memory", path], [tool, path, "--step", "3"]]
            for cmd in runs:
                refused(cmd, env, f"{which} {name} ({' '.join(cmd[1:])})", 1, words)
        check(os.listdir(cwd) == [], f"a failed run wrote {os.listdir(cwd)}")

        # Command-line values out of range or not numbers: refused in one line, exit 2.
        if which == "ts_trace_check":
            bad_values = [(["--steps", "abc"], ["--steps", "'abc'"]), (["--steps", "99999999999999999999"],
                                                                         ["--steps", "out of range"])]
        elif which == "ts_trace_svg":
            bad_values = [([option, value], [option, value]) for option in ("--from-us", "--to-us")
                          for value in ("1e300", "-1e300", "nan", "inf", "1e400")]
            bad_values += [(["--step", "99999999999999999999"], ["--step", "out of range"])]
        else:
            bad_values = []
        for extra, words in bad_values:
            cmd = [tool, good] + extra + (["-o", "-"] if which == "ts_trace_svg" else [])
            refused(cmd, None, f"{which} {' '.join(extra)}", 2, words)

        # Many scopes, each with a memory event, on one thread: read and drawn in linear time. The
        # time of 40000 scopes against 10000, not a wall-clock bound (a sanitizer build is 10x slower):
        # linear work grows 4x, work quadratic in the scopes 16x.
        runs = {}
        for n in (10_000, 40_000):
            heavy = os.path.join(tmp, f"memory_heavy_{n}.json")
            count = memory_heavy_trace(heavy, n)
            cmd = {"ts_trace_check": [tool, heavy], "ts_trace_diff": [tool, heavy, heavy],
                   "ts_trace_svg": [tool, "--memory", heavy, "-o", "-"]}[which]
            r, seconds = timed_run(cmd, limit=max_seconds * 6, cwd=cwd)
            runs[n] = seconds
            print(f"{which} on {os.path.getsize(heavy)} bytes ({count} memory events): "
                  f"{'timed out' if r is None else f'exit {r.returncode}'} in {seconds:.2f} s")
        growth = runs[40_000] / max(runs[10_000], 0.05)
        check(r is not None and growth < 8,
              f"{which}: 4x the scopes took {growth:.1f}x the time ({runs[10_000]:.2f} s -> {runs[40_000]:.2f} s), "
              "expected under 8x (linear)")
        if r is not None:
            check(r.returncode in (0, 1) and (r.returncode == 0 or which == "ts_trace_check"),
                  f"{which} on the memory-heavy trace: exit {r.returncode}: {r.stderr.strip()[:300]}")
            if which == "ts_trace_svg" and r.returncode == 0:
                ticks = r.stdout.count('class="mem-ev"')
                check(ticks == count, f"--memory drew {ticks} memory events, the trace has {count}")


# ---- pictures and quotes --------------------------------------------------------------


def case_pictures(a):
    # The walk-throughs' picture folders: docs/h200-runs/<tutorial>/pictures/ (tutorial 05's are its own run's,
    # the ladder's rooflines tools/ladder_roofline.py's, held to their tables by tests/test_roofline.py).
    def pictures(root):
        base = os.path.join(root, "docs", "h200-runs")
        found = []
        for tutorial in sorted(os.listdir(base)) if os.path.isdir(base) else []:
            folder = os.path.join(base, tutorial, "pictures")
            if tutorial.startswith("05_") or tutorial == "ladder" or not os.path.isdir(folder):
                continue
            found += [os.path.join("docs", "h200-runs", tutorial, "pictures", n)
                      for n in sorted(os.listdir(folder)) if n.endswith(".svg")]
        return found
    with tempfile.TemporaryDirectory() as tmp:
        r = run(["bash", a.script, a.tool, tmp])
        check(r.returncode == 0, f"render_pictures.sh: exit {r.returncode}: {r.stderr.strip()}")
        made = pictures(tmp)
        committed = pictures(a.root)
        check(made == committed, f"pictures made {made}, committed {committed}")
        for name in made:
            with open(os.path.join(tmp, name), "rb") as x:
                new = x.read()
            path = os.path.join(a.root, name)
            old = open(path, "rb").read() if os.path.exists(path) else b""
            check(new == old, f"{name} differs from the committed picture: run tools/render_pictures.sh")
            check(len(new) <= a.max_bytes, f"{name} is {len(new)} bytes, more than {a.max_bytes}")
            print(f"{name}: {len(new)} bytes, {'same' if new == old else 'DIFFERENT'}")
    # Every picture a page shows exists.
    for md in a.docs:
        text = open(md).read()
        for picture in re.findall(r"!\[[^\]]*\]\(([^)]+\.svg)\)", text):
            path = os.path.normpath(os.path.join(os.path.dirname(md), picture))
            check(os.path.exists(path), f"{md} shows {picture}, which does not exist")


def case_quote(a):
    lines = open(a.output).read().splitlines()
    check(lines and lines[0].startswith("$ "), f"{a.output} does not start with the command ('$ ...')")
    command = lines[0][2:].split()
    r = run([a.tool] + command[1:], cwd=a.root)  # the committed command, with this build's tool
    check(r.returncode == 0, f"{command}: exit {r.returncode}: {r.stderr.strip()}")
    check(r.stdout.splitlines() == lines[1:], f"{a.output} is not what `{' '.join(command)}` prints today")
    # The README's block that starts with the same command: each line in the file, in order ("..." skips).
    readme = open(a.readme).read().splitlines()
    start = readme.index(lines[0])
    end = readme.index("```", start)
    at = 0
    for line in readme[start:end]:
        if line.strip() == "...":
            continue
        try:
            at = lines.index(line, at) + 1
        except ValueError:
            check(False, f"README line not in {a.output} (or out of order): {line!r}")
    print(f"quote: {end - start} README lines checked against {a.output}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("case")
    p.add_argument("--tool")
    p.add_argument("--trace")
    p.add_argument("--step", type=int)
    p.add_argument("--from-us", type=float)
    p.add_argument("--to-us", type=float)
    p.add_argument("--max-bytes", type=int, default=150_000)
    p.add_argument("--before")
    p.add_argument("--after")
    p.add_argument("--table")
    p.add_argument("--script")
    p.add_argument("--docs", nargs="*", default=[])
    p.add_argument("--output")
    p.add_argument("--readme")
    p.add_argument("--root", default=".")
    a = p.parse_args()
    cases = {"svg": case_svg, "svg-errors": case_svg_errors, "diff-self": case_diff_self,
             "diff-fusion": case_diff_fusion, "diff-table": case_diff_table, "diff-errors": case_diff_errors,
             "hostile": case_hostile, "pictures": case_pictures, "quote": case_quote}
    cases[a.case](a)
    print("FAILED" if failures else "OK")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
