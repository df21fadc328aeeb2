#!/usr/bin/env python3
"""tests/test_roofline.py: tools/ladder_roofline.py's pictures are the committed ones, byte for byte,
and what they draw is what the ladder tables say.

    python3 tests/test_roofline.py [--root DIR]

For every picture the tool lists: it is drawn twice into temporary folders (the same bytes both
times and the same bytes as docs/h200-runs/ladder/pictures/), then read back as XML and checked
against the table, parsed here on its own: every ok rung of the chosen ops with FLOPs is a circle at
(log FLOPs/bytes, log FLOPs/median) in the box's decades, every one with FLOPs 0 a bar of
bytes/median against the copy ceiling; nothing else is drawn; the GEMM ceiling is flat at the
printed TFLOP/s from the ridge on; both ends of the copy ceiling lie on TFLOP/s = GB/s x intensity /
1000; the labels carry the printed TFLOP/s (or GB/s) and % roof; the title names every op, its shape
and the table. Last, a table whose median is misprinted makes the tool fail.
"""
import argparse
import math
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

NS = "{http://www.w3.org/2000/svg}"
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)


def table_ops(path):
    """{op: (shape, flops, bytes, copy, gemm, [(variant, status, median, tflops, gbps, pct)])}, split on spaces."""
    ops, op = {}, None
    for line in open(path, encoding="utf-8").read().splitlines():
        w = line.split()
        if len(w) > 12 and w[4] == "FLOPs" and w[6] == "bytes" and w[8] == "ceilings:":
            op = ops[w[0]] = (w[3], float(w[5]), float(w[7]), w[10], w[13], [])
        elif not w:
            op = None
        elif op is not None and w[0].isdigit() and len(w) > 2:
            if w[2] == "ok":
                op[5].append((w[1], "ok", float(w[4]), w[6], w[7], w[8]))
            else:
                op[5].append((w[1], w[2], None, None, None, None))
    return ops


def run_tool(root, tool, *args):
    return subprocess.run([sys.executable, tool, "--root", root, *args], capture_output=True, text=True)


def check_picture(name, table, op_names, svg_text):
    root = ET.fromstring(svg_text)
    ops = table_ops(table)
    plot = root.find(f".//{NS}rect[@class='plot']")
    x0, y0, w, h = (float(plot.get(k)) for k in ("x", "y", "width", "height"))
    x_lo, x_hi = map(int, plot.get("data-x-decades").split())
    y_lo, y_hi = map(int, plot.get("data-y-decades").split())

    def xof(ai):
        return x0 + (math.log10(ai) - x_lo) / (x_hi - x_lo) * w

    def yof(rate):
        return y0 + h - (math.log10(rate) - y_lo) / (y_hi - y_lo) * h

    circles = {c.get("data-name"): c for c in root.iter(f"{NS}circle") if c.get("class") == "rung"}
    bars = {r.get("data-name"): r for r in root.iter(f"{NS}rect") if r.get("class") == "bar"}
    texts = [t.text or "" for t in root.iter(f"{NS}text")]
    title = root.find(f".//{NS}text[@class='title']").text
    source = root.find(f".//{NS}text[@class='source']").text
    check(f"docs/h200-runs/ladder/{os.path.basename(table)}" in source, f"{name}: the subtitle does not name {table}")
    want_points, want_bars = set(), set()
    copy_s, gemm_s = ops[op_names[0]][3], ops[op_names[0]][4]
    copy, gemm = float(copy_s), float(gemm_s)
    for op in op_names:
        shape, flops, nbytes, c, g, rungs = ops[op]
        check((c, g) == (copy_s, gemm_s), f"{name}: {op}'s ceilings differ from the first op's")
        check(f"{op} {shape}" in title, f"{name}: the title {title!r} does not name {op} {shape}")
        for variant, status, median, tflops, gbps, pct in rungs:
            if status != "ok":
                check(variant not in circles and variant not in bars, f"{name}: {variant} ({status}) drawn")
                continue
            if flops > 0:
                want_points.add(variant)
                cx, cy = xof(flops / nbytes), yof(flops / (median * 1e-6) / 1e12)
                got = circles.get(variant)
                check(got is not None and abs(float(got.get("cx")) - cx) < 0.06 and abs(float(got.get("cy")) - cy) < 0.06,
                      f"{name}: {variant} not at ({cx:.1f}, {cy:.1f})")
                check(f"{variant}  {tflops} TFLOP/s  {pct}% roof" in texts, f"{name}: no label for {variant}")
            else:
                want_bars.add((variant, nbytes / (median * 1e-6) / 1e9))
                check(f"{variant}  {gbps} GB/s  {pct}% roof" in texts, f"{name}: no label for {variant}")
    check(set(circles) == want_points, f"{name}: points {sorted(circles)}, expected {sorted(want_points)}")
    check(set(bars) == {v for v, _ in want_bars}, f"{name}: bars {sorted(bars)}, expected {sorted(want_bars)}")
    if want_bars:
        full = max([copy] + [r for _, r in want_bars])
        for variant, rate in want_bars:
            check(abs(float(bars[variant].get("width")) - rate / full * w) < 0.06, f"{name}: {variant}'s bar width")
        line = root.find(f".//{NS}line[@class='bar-copy']")
        check(abs(float(line.get("x1")) - (x0 + copy / full * w)) < 0.06, f"{name}: the bars' copy ceiling")
    flat = root.find(f".//{NS}line[@class='ceiling-gemm']")
    slope = root.find(f".//{NS}line[@class='ceiling-copy']")
    check(flat.get("data-tflops") == gemm_s and slope.get("data-gbps") == copy_s, f"{name}: the ceilings' values")
    check(abs(float(flat.get("y1")) - yof(gemm)) < 0.06 and flat.get("y1") == flat.get("y2"),
          f"{name}: the GEMM ceiling is not flat at {gemm_s} TFLOP/s")
    ridge = gemm * 1e3 / copy
    check(abs(float(flat.get("x1")) - xof(ridge)) < 0.06 and abs(float(slope.get("x2")) - xof(ridge)) < 0.06,
          f"{name}: the two ceilings do not meet at the ridge ({ridge:.1f} FLOPs per byte)")
    for xk, yk in (("x1", "y1"), ("x2", "y2")):
        ai = 10 ** ((float(slope.get(xk)) - x0) / w * (x_hi - x_lo) + x_lo)
        check(abs(float(slope.get(yk)) - yof(ai * copy / 1e3)) < 0.2,
              f"{name}: the copy ceiling's end ({slope.get(xk)}, {slope.get(yk)}) is not at {copy_s} GB/s")
    check(f"gemm ceiling {gemm_s} TFLOP/s" in texts and f"copy ceiling {copy_s} GB/s" in texts,
          f"{name}: the ceilings' labels")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    root = os.path.abspath(p.parse_args().root)
    tool = os.path.join(root, "tools", "ladder_roofline.py")
    sys.path.insert(0, os.path.join(root, "tools"))
    sys.dont_write_bytecode = True
    import ladder_roofline
    ladder = os.path.join(root, "docs", "h200-runs", "ladder")
    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
        for out in (a, b):
            r = run_tool(root, tool, "--out", out)
            check(r.returncode == 0, f"the tool failed: {r.stderr.strip()}")
        for name, table, op_names in ladder_roofline.PICTURES:
            svg = os.path.join("pictures", name + ".svg")
            drawn = open(os.path.join(a, name + ".svg"), "rb").read()
            check(drawn == open(os.path.join(b, name + ".svg"), "rb").read(), f"{name}: two drawings differ")
            committed = os.path.join(ladder, svg)
            check(os.path.exists(committed) and drawn == open(committed, "rb").read(),
                  f"{name}: docs/h200-runs/ladder/{svg} is not what the tool draws (python3 tools/ladder_roofline.py)")
            check_picture(name, os.path.join(ladder, table), op_names, drawn.decode("utf-8"))
    check(run_tool(root, tool, "--check").returncode == 0, "--check fails on the committed pictures")
    # A misprinted median (cuBLAS's 175.7 us as 275.7) disagrees with the printed TFLOP/s: refused.
    with tempfile.TemporaryDirectory() as fake:
        shutil.copytree(ladder, os.path.join(fake, "docs", "h200-runs", "ladder"))
        path = os.path.join(fake, "docs", "h200-runs", "ladder", "ladder_mm_4096.txt")
        text = open(path, encoding="utf-8").read()
        check("       175.7    " in text, "ladder_mm_4096.txt: cuBLAS's median is not 175.7")
        open(path, "w", encoding="utf-8").write(text.replace("       175.7    ", "       275.7    "))
        r = run_tool(fake, tool, "--out", fake)
        check(r.returncode == 1 and "mm/cuda/cublas" in r.stderr, f"a misprinted median was drawn: {r.stderr.strip()}")
    for f in failures:
        print(f"test_roofline: FAIL: {f}", file=sys.stderr)
    if not failures:
        print(f"test_roofline: ok ({len(ladder_roofline.PICTURES)} pictures, byte for byte and point by point)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
