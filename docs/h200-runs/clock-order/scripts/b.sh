#!/usr/bin/env bash
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
[[ -x build/h-old/ts_bench && -x build/h-new/ts_bench ]] || { echo "builds missing (cold machine)"; exit 3; }
for r in $(seq 1 15); do
  for b in old new; do
    echo "== round $r $b" >> $OUT/dispatch2.log
    build/h-$b/ts_bench --filter dispatch >> $OUT/dispatch2.log 2>&1
  done
done
echo "dispatch2 done at $(el) s" >> $OUT/b.txt
for i in 1 2 3 4 5 6; do python3 devrun/torch_clock.py 5000 /tmp/torch_$i.json >> $OUT/b.txt 2>&1; done
echo "torch done at $(el) s" >> $OUT/b.txt
for r in 1 2 3; do
  for b in new old; do
    (( $(el) < 540 )) || break 2
    build/h-$b/ts_tests -tc='cuda*,profiler cuda*' > /tmp/suite-$b-$r.log 2>&1
    echo "suite $b $r rc=$? at $(el) s: $(grep -a 'test cases:' /tmp/suite-$b-$r.log | tail -1)" >> $OUT/b.txt
    grep -a -A3 "launch_order_violations == 0 ) is NOT" /tmp/suite-$b-$r.log | head -8 >> $OUT/b.txt
  done
done
tar -czf $OUT/suites.tgz -C /tmp $(cd /tmp && ls suite-*.log)
