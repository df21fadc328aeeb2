# dispatch_summary.py ROUNDS_LOG...: per entry and build, the median (and range) of ts_bench's
# per-round medians in logs of "== round N old|new" blocks (dispatch-summary.txt).
import re, statistics, sys

values = {}
for path in sys.argv[1:]:
    build = None
    for line in open(path):
        if m := re.match(r"== round (\d+) (\w+)", line):
            build = m.group(2)
        elif (m := re.match(r"(dispatch/\S+)\s+([\d.]+)\s", line)) and build:
            values.setdefault((m.group(1), build), []).append(float(m.group(2)))
for (name, build), v in sorted(values.items()):
    print(f"{name:32} {build:4} rounds={len(v)} median={statistics.median(v):.3f} min={min(v):.3f} max={max(v):.3f}")
