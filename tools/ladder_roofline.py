#!/usr/bin/env python3
"""tools/ladder_roofline.py: the tutorials' key kernels on a roofline, from committed ts_ladder tables.

    python3 tools/ladder_roofline.py            # writes docs/h200-runs/ladder/pictures/*.svg
    python3 tools/ladder_roofline.py --out DIR  # the same pictures into DIR
    python3 tools/ladder_roofline.py --check    # draws them into a temporary folder: 0 when each equals the committed one

Each picture (PICTURES below) is a set of ops of one ladder table (a ts_ladder .txt of
docs/h200-runs/ladder/, see tools/refresh_ladder.sh). For every op its header line gives the FLOPs,
the bytes and the run's two ceilings ("FLOPs 1.37e+11  bytes 1.01e+08  ceilings: copy 4207 GB/s,
gemm 788.0 TFLOP/s"); every rung whose status is ok is drawn from its median:
  x = FLOPs / bytes (arithmetic intensity), y = FLOPs / median (TFLOP/s), both on log scales;
  the roof: the copy ceiling's slope (TFLOP/s = GB/s x intensity / 1000) up to the ridge, the GEMM
  ceiling flat after it. An op with FLOPs 0 has no intensity: its rungs are bars of bytes / median
  against the copy ceiling, under the roofline. Rungs refused are named in the footer.
Labels print the table's own TFLOP/s (or GB/s) and % roof columns. The same table gives the same
bytes: no timestamps, coordinates with one decimal, rungs in the table's order.
Exits 1 when a table lacks an op, its ops' ceilings disagree, or a recomputed rate is more than 1%
off the printed one (a misread line), with one line on stderr.
"""
import argparse
import math
import os
import re
import sys
import tempfile

LADDER = "docs/h200-runs/ladder"
# name, table, ops: each picture's rungs are every rung of these ops in that table.
PICTURES = [
    ("01_mm_4096", "ladder_mm_4096.txt", ["mm"]),
    ("03_mlp", "ladder_all_cuda.txt", ["linear", "linear_geglu", "geglu"]),
    ("04_attention", "ladder_all_cuda.txt", ["scaled_dot_product_attention", "softmax", "masked_fill_"]),
    ("04_scores_softmax", "ladder_softmax_65536x1024.txt", ["softmax"]),
]

HEADER = re.compile(r"^(\S+)  (\S+) (\S+)  (\S+)  FLOPs (\S+)  bytes (\S+)  ceilings: copy (\S+) GB/s, gemm (\S+) TFLOP/s$")
RUNG = re.compile(r"^ +(\d+)  (\S+) +(\S+)(.*)$")
FONT = "DejaVu Sans Mono, Menlo, Consolas, monospace"
CHAR = 6.02                                   # px per character at font-size 10
LEFT, RIGHT, TOP, HEIGHT = 70, 560, 60, 360   # the roofline's box
MEMORY, COMPUTE, BAR, INK, GRID = "#3b7dc4", "#e07b39", "#94bce9", "#333333", "#e6e6e6"


class LadderError(Exception):
    pass


def read_table(path):
    """{op: {shape, flops, bytes, copy, gemm, rungs: [{rung, name, status, median, rate, pct}]}}."""
    ops, op = {}, None
    with open(path, encoding="utf-8") as f:
        for line in f.read().splitlines():
            m = HEADER.match(line)
            if m:
                op = {"shape": m.group(4), "flops": float(m.group(5)), "bytes": float(m.group(6)),
                      "copy": m.group(7), "gemm": m.group(8), "rungs": []}
                ops[m.group(1)] = op
                continue
            if not line.strip():
                op = None
            m = RUNG.match(line) if op is not None else None
            if m:
                fields = m.group(4).split()
                rung = {"rung": m.group(1), "name": m.group(2), "status": m.group(3)}
                if rung["status"] == "ok":  # n, median, p10..p90, TFLOP/s, GB/s, % roof, rel err
                    rung.update(median=float(fields[1]), tflops=fields[3], gbps=fields[4], pct=fields[5])
                op["rungs"].append(rung)
    return ops


def px(v):
    s = f"{v:.1f}"
    return "0.0" if s == "-0.0" else s


def esc(t):
    return t.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def text(x, y, s, extra=""):
    return f'<text x="{px(x)}" y="{px(y)}"{extra}>{esc(s)}</text>\n'


def decade(e):
    return str(10 ** e) if e >= 0 else f"{10.0 ** e:.{-e}f}"


def spread(wanted, top, bottom, gap):
    """Label baselines near the wanted ones (sorted), at least gap apart, within [top, bottom]."""
    ys = []
    for w in wanted:
        ys.append(max(w, top if not ys else ys[-1] + gap))
    if ys and ys[-1] > bottom:
        ys[-1] = bottom
        for i in range(len(ys) - 2, -1, -1):
            ys[i] = min(ys[i], ys[i + 1] - gap)
    return ys


def render(root, table, op_names):
    path = f"{LADDER}/{table}"
    ops = read_table(os.path.join(root, path))
    chosen = []
    for name in op_names:
        if name not in ops:
            raise LadderError(f"{path}: no op {name} with FLOPs and bytes")
        chosen.append((name, ops[name]))
    copy_s, gemm_s = chosen[0][1]["copy"], chosen[0][1]["gemm"]
    if any((o["copy"], o["gemm"]) != (copy_s, gemm_s) for _, o in chosen):
        raise LadderError(f"{path}: the chosen ops print different ceilings")
    copy, gemm = float(copy_s), float(gemm_s)
    points, bars, refused = [], [], []
    for name, o in chosen:
        for r in o["rungs"]:
            if r["status"] != "ok":
                refused.append(f"{r['name']} ({r['status']})")
                continue
            seconds = r["median"] * 1e-6
            if o["flops"] > 0:
                rate, printed = o["flops"] / seconds / 1e12, float(r["tflops"])
                points.append(dict(r, ai=o["flops"] / o["bytes"], rate=rate))
            else:
                rate, printed = o["bytes"] / seconds / 1e9, float(r["gbps"])
                bars.append(dict(r, rate=rate))
            if abs(rate - printed) > 0.01 * printed:
                raise LadderError(f"{path}: {r['name']}: {rate:.4g} recomputed from the median, {printed} printed")
    ridge = gemm * 1e3 / copy
    ais = [p["ai"] for p in points] + [ridge]
    rates = [p["rate"] for p in points] + [gemm]
    x_lo, x_hi = math.floor(math.log10(min(ais)) - 0.1), math.ceil(math.log10(max(ais)) + 0.25)
    y_lo, y_hi = math.floor(math.log10(min(rates)) - 0.25), math.ceil(math.log10(max(rates)) + 0.1)
    x_lo = min(x_lo, x_hi - 3)  # at least three decades, so that the slope shows

    def xof(ai):
        return LEFT + (math.log10(ai) - x_lo) / (x_hi - x_lo) * (RIGHT - LEFT)

    def yof(rate):
        return TOP + HEIGHT - (math.log10(rate) - y_lo) / (y_hi - y_lo) * HEIGHT

    labels = [f"{p['name']}  {p['tflops']} TFLOP/s  {p['pct']}% roof" for p in points]
    shapes = ", ".join(f"{name} {o['shape']}" for name, o in chosen)
    title = f"roofline: {shapes}"
    source = (f"from {path}: each ok rung at FLOPs / bytes and FLOPs / median; "
              f"the ceilings its lines print (copy {copy_s} GB/s, gemm {gemm_s} TFLOP/s)")
    width = math.ceil(max(RIGHT + 30 + max([len(t) for t in labels] + [60]) * CHAR + 10,
                          20 + len(source) * CHAR, 20 + len(title) * CHAR * 1.3))
    body = [f'<rect class="plot" x="{LEFT}" y="{TOP}" width="{RIGHT - LEFT}" height="{HEIGHT}" fill="none" '
            f'stroke="{INK}" data-x-decades="{x_lo} {x_hi}" data-y-decades="{y_lo} {y_hi}"/>\n']
    for e in range(x_lo, x_hi + 1):
        x = xof(10.0 ** e)
        body.append(f'<line x1="{px(x)}" y1="{TOP}" x2="{px(x)}" y2="{TOP + HEIGHT}" stroke="{GRID}"/>\n')
        body.append(text(x, TOP + HEIGHT + 14, decade(e), ' text-anchor="middle"'))
    for e in range(y_lo, y_hi + 1):
        y = yof(10.0 ** e)
        body.append(f'<line x1="{LEFT}" y1="{px(y)}" x2="{RIGHT}" y2="{px(y)}" stroke="{GRID}"/>\n')
        body.append(text(LEFT - 6, y + 3, decade(e), ' text-anchor="end"'))
    body.append(text((LEFT + RIGHT) / 2, TOP + HEIGHT + 30, "arithmetic intensity: FLOPs / bytes (log)",
                     ' text-anchor="middle"'))
    mid = TOP + HEIGHT / 2
    body.append(text(16, mid, "TFLOP/s: FLOPs / median (log)", f' text-anchor="middle" transform="rotate(-90 16 {px(mid)})"'))
    # The roof: the slope from where it enters the box to the ridge, then flat.
    start = max(10.0 ** x_lo, 10.0 ** y_lo * 1e3 / copy)
    rx, fy = xof(ridge), yof(gemm)
    body.append(f'<line class="ceiling-copy" data-gbps="{copy_s}" x1="{px(xof(start))}" y1="{px(yof(start * copy / 1e3))}" '
                f'x2="{px(rx)}" y2="{px(fy)}" stroke="{INK}" stroke-width="2"/>\n')
    body.append(f'<line class="ceiling-gemm" data-tflops="{gemm_s}" x1="{px(rx)}" y1="{px(fy)}" x2="{RIGHT}" y2="{px(fy)}" '
                f'stroke="{INK}" stroke-width="2"/>\n')
    body.append(text(RIGHT - 4, fy - 6, f"gemm ceiling {gemm_s} TFLOP/s", ' text-anchor="end"'))
    body.append(text(rx + 6, fy + 14, f"ridge {ridge:.1f} FLOPs/byte"))
    sx, sy = xof(start), yof(start * copy / 1e3)
    angle = math.degrees(math.atan2(fy - sy, rx - sx))
    lx, ly = sx + 0.3 * (rx - sx), sy + 0.3 * (fy - sy) - 6
    body.append(text(lx, ly, f"copy ceiling {copy_s} GB/s", f' transform="rotate({angle:.1f} {px(lx)} {px(ly)})"'))
    order = sorted(range(len(points)), key=lambda i: (yof(points[i]["rate"]), i))
    ys = spread([yof(points[i]["rate"]) + 3 for i in order], TOP + 10, TOP + HEIGHT - 4, 13)
    for i, ly in zip(order, ys):
        p = points[i]
        x, y = xof(p["ai"]), yof(p["rate"])
        fill = MEMORY if p["ai"] < ridge else COMPUTE
        body.append(f'<circle class="rung" data-name="{esc(p["name"])}" cx="{px(x)}" cy="{px(y)}" r="4" fill="{fill}"/>\n')
        body.append(f'<line x1="{px(x + 5)}" y1="{px(y)}" x2="{RIGHT + 26}" y2="{px(ly - 3)}" stroke="#bbbbbb"/>\n')
        body.append(text(RIGHT + 30, ly, labels[i]))
    y = TOP + HEIGHT + 50
    if bars:
        body.append(text(10, y, "FLOPs 0, no intensity: bytes / median (GB/s) against the copy ceiling"))
        top = max([copy] + [b["rate"] for b in bars])
        cx = LEFT + copy / top * (RIGHT - LEFT)
        for b in bars:
            y += 18
            w = b["rate"] / top * (RIGHT - LEFT)
            body.append(f'<rect class="bar" data-name="{esc(b["name"])}" x="{LEFT}" y="{px(y - 10)}" width="{px(w)}" '
                        f'height="12" fill="{BAR}"/>\n')
            body.append(text(RIGHT + 30, y, f"{b['name']}  {b['gbps']} GB/s  {b['pct']}% roof"))
        body.append(f'<line class="bar-copy" x1="{px(cx)}" y1="{px(y - len(bars) * 18 - 6)}" x2="{px(cx)}" '
                    f'y2="{px(y + 4)}" stroke="{INK}" stroke-width="2"/>\n')
        body.append(text(cx - 4, y - len(bars) * 18 - 8, f"copy ceiling {copy_s} GB/s", ' text-anchor="end"'))
        y += 10
    if refused:
        y += 16
        body.append(text(10, y, "not drawn: " + ", ".join(refused)))
    height = y + 14
    head = ['<?xml version="1.0" encoding="UTF-8"?>\n',
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height:.0f}" '
            f'viewBox="0 0 {width} {height:.0f}" font-family="{FONT}" font-size="10">\n',
            f'<rect x="0" y="0" width="{width}" height="{height:.0f}" fill="#ffffff"/>\n',
            text(10, 18, title, ' class="title" font-size="13" font-weight="bold"'),
            text(10, 34, source, ' class="source"')]
    return "".join(head + body) + "</svg>\n"


def write_all(root, out):
    for name, table, ops in PICTURES:
        with open(os.path.join(out, name + ".svg"), "w", encoding="utf-8", newline="\n") as f:
            f.write(render(root, table, ops))


def main():
    p = argparse.ArgumentParser(description="The tutorials' key kernels on a roofline, from committed ladder tables.")
    p.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    p.add_argument("--out", help=f"the folder (default {LADDER}/pictures)")
    p.add_argument("--check", action="store_true", help="compare with the committed pictures instead of writing")
    a = p.parse_args()
    committed = os.path.join(a.root, LADDER, "pictures")
    try:
        if not a.check:
            out = a.out or committed
            os.makedirs(out, exist_ok=True)
            write_all(a.root, out)
            print(f"ladder_roofline: {len(PICTURES)} pictures in {out}")
            return 0
        with tempfile.TemporaryDirectory() as tmp:
            write_all(a.root, tmp)
            bad = []
            for name, _, _ in PICTURES:
                with open(os.path.join(tmp, name + ".svg"), "rb") as f, open(os.path.join(committed, name + ".svg"), "rb") as g:
                    if f.read() != g.read():
                        bad.append(name)
    except (LadderError, OSError) as e:
        print(f"ladder_roofline: {e}", file=sys.stderr)
        return 1
    for name in bad:
        print(f"ladder_roofline: {LADDER}/pictures/{name}.svg differs from what the tool draws", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
