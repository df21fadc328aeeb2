import re, sys, os, glob
d = sys.argv[1]
rcs = dict()
for line in open(os.path.join(d, "rc.txt")):
    b, r, rc = line.split(); rcs[(b, int(r))] = rc
print("build round rc  kernels  min_delta_ns  median_delta_ns  violations_100k")
for (b, r), rc in sorted(rcs.items(), key=lambda x: (x[0][1], x[0][0])):
    text = open(os.path.join(d, f"{b}-{r}.log"), errors="replace").read()
    deltas = [int(x) - int(y) for x, y in re.findall(r"launch_of\[e\.correlation\]->start_ns \) is (?:NOT )?correct!\s*\n\s*values: CHECK\( (\d+) >= (\d+) \)", text)]
    v = re.findall(r"launch_order_violations == 0 \) is (?:NOT )?correct!\s*\n\s*values: CHECK\( (\d+) == 0 \)", text)
    deltas.sort()
    med = deltas[len(deltas)//2] if deltas else None
    print(f"{b:5} {r:5} {rc:5} {len(deltas):7} {min(deltas) if deltas else None!s:>13} {med!s:>16}  {' '.join(v)}")
