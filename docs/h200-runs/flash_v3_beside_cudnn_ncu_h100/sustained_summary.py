# sustained_summary.py: the median SM clock, power, utilization and temperature nvidia-smi sampled
# (smi.csv, every 50 ms) while each sustained run of sustained_marks.txt was busy (utilization >= 90%).
# Run in this folder: python3 sustained_summary.py > sustained_summary.txt
import csv, datetime, statistics, sys
rows = []
for r in list(csv.reader(open('smi.csv')))[1:]:
    try:
        t = datetime.datetime.strptime(r[0].strip(), '%Y/%m/%d %H:%M:%S.%f').replace(tzinfo=datetime.timezone.utc).timestamp()
        rows.append((t, float(r[1]), float(r[2]), float(r[3]), float(r[4])))
    except Exception: pass
marks = {}  # run name (numbered when a name repeats) -> its start and end
seen = {}
for line in open('sustained_marks.txt'):
    *words, kind, t = line.split()
    name = ' '.join(words)
    if kind == 'start':
        seen[name] = seen.get(name, 0) + 1
    key = name if seen[name] == 1 else f"{name} #{seen[name]}"
    marks.setdefault(key, {})[kind] = float(t)
print(f"{'run':28s} {'samples':>7s} {'SM MHz':>7s} {'W':>6s} {'util%':>5s} {'temp':>4s}")
for name, m in marks.items():
    # the GPU is busy from about 1 s after the process starts (imports, allocations)
    sel = [r for r in rows if m['start'] <= r[0] <= m['end'] and r[3] >= 90]
    if not sel: print(name, 'no samples'); continue
    print(f"{name:28s} {len(sel):7d} {statistics.median(r[1] for r in sel):7.0f} {statistics.median(r[2] for r in sel):6.1f} {statistics.median(r[3] for r in sel):5.0f} {statistics.median(r[4] for r in sel):4.0f}")
