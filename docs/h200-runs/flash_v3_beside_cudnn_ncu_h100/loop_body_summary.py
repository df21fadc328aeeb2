# loop_body_summary.py: the instructions of flash_v3's main loop per consumer warp and iteration,
# by opcode, from Nsight Compute's per-instruction page (sass_free_d192_noncausal.csv): the
# instructions executed as often as the most-executed HGMMAs (once per warp and iteration of the
# overlapped loop), grouped by their opcode's first word.
# Run in this folder: python3 loop_body_summary.py > loop_body_summary.txt
import collections
import csv

rows = list(csv.reader(open("sass_free_d192_noncausal.csv")))
head = next(i for i, r in enumerate(rows) if r and r[0] == "Address")
source, executed = rows[head].index("Source"), rows[head].index("Instructions Executed")
body = [(r[source].strip(), float(r[executed] or 0)) for r in rows[head + 1:] if len(r) > executed]
loop_count = max(n for s, n in body if "HGMMA" in s)  # the loop runs more often than the code around it
ops = collections.Counter()
for s, n in body:
    if n == loop_count:
        words = s.split()
        op = words[1] if words[0].startswith("@") else words[0]
        ops[op.split(".")[0]] += 1
total = sum(ops.values())
print(f"instructions executed {loop_count:.0f} times (the loop's HGMMAs): {total} per warp and iteration")
for op, n in ops.most_common():
    print(f"  {op:10s} {n:4d}")
integer = sum(n for op, n in ops.items() if op[0] in "UIRLSV" and op not in ("SYNCS", "SHFL"))
print(f"integer and uniform-datapath instructions (U*, I*, R2UR, LOP3, SHF, VIADD): {integer}")
