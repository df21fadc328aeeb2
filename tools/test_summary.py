#!/usr/bin/env python3
"""tools/test_summary.py CTEST_LOG LAST_TEST_LOG [--label NAME]: what `make test` prints after ctest.

ctest marks a test skipped (a GPU test on a machine without a GPU, the HTA checks without PyPI, the
gdb walk-through without a debug build) and prints only its name. This prints why: each skipped
test's reason, read from its own output in ctest's LastTest.log (the line that says "skipped", or
else its last line), one line per reason with how many tests gave it and a few of their names.
Then one line counts what passed, was skipped and failed (ctest's "100% tests passed" counts a
skipped test as not failed).

A doctest case that ctest ran and that ran no test case ("[doctest] test cases: 0 |": its name did
not reach doctest whole, as a ';' in a name, CMake's list separator, makes happen) passed without
checking anything: it is listed, and the exit status is 1.
"""
import argparse
import re
import sys
from collections import OrderedDict

RESULT = re.compile(r"^\s*\d+/\d+ Test\s+#\d+: (.+?) \.+\s*(\*\*\*)?(Passed|Skipped|Failed|Not Run|Exception|Timeout)\b")
OUTPUT_START = "Output:\n" + "-" * 58 + "\n"


def results(ctest_log):
    """(name, status) for each test ctest ran, in its order."""
    out = []
    for line in ctest_log.splitlines():
        m = RESULT.match(line)
        if m:
            out.append((m.group(1).strip(), m.group(3)))
    return out


def outputs(last_test_log):
    """test name -> what it printed, from ctest's LastTest.log."""
    found = {}
    for block in re.split(r"\n(?=\d+/\d+ Testing: )", last_test_log):
        m = re.match(r"\d+/\d+ Testing: (.*)\n", block)
        if not m or OUTPUT_START not in block:
            continue
        text = block.split(OUTPUT_START, 1)[1].split("<end of output>", 1)[0]
        found[m.group(1).strip()] = text
    return found


def reason(output):
    lines = [l.strip() for l in output.splitlines() if l.strip()]
    for line in lines:
        if "skipped" in line.lower():
            return re.sub(r"^.*?(skipped)", r"\1", line, count=1, flags=re.IGNORECASE)
    return lines[-1] if lines else "(it printed nothing)"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("ctest_log")
    parser.add_argument("last_test_log")
    parser.add_argument("--label", default="tests")
    args = parser.parse_args()
    with open(args.ctest_log, errors="replace") as f:
        ran = results(f.read())
    try:
        with open(args.last_test_log, errors="replace") as f:
            printed = outputs(f.read())
    except OSError:
        printed = {}
    by_reason = OrderedDict()
    for name, status in ran:
        if status == "Skipped":
            by_reason.setdefault(reason(printed.get(name, "")), []).append(name)
    if by_reason:
        print(f"\nskipped, and why ({sum(len(v) for v in by_reason.values())} tests):")
        for why, names in by_reason.items():
            shown = ", ".join(names[:3]) + (f", ... ({len(names) - 3} more)" if len(names) > 3 else "")
            print(f"  {len(names):4d} x {why}\n         {shown}")
    vacuous = [name for name, status in ran if status == "Passed" and "[doctest] test cases: 0 |" in printed.get(name, "")]
    if vacuous:
        print(f"\nran no test case ({len(vacuous)}: each passed without checking anything; is there a ';' in its name?):")
        for name in vacuous:
            print(f"  {name}")
    passed = sum(1 for _, s in ran if s == "Passed")
    skipped = sum(1 for _, s in ran if s == "Skipped")
    failed = sum(1 for _, s in ran if s not in ("Passed", "Skipped"))
    print(f"{args.label}: {passed} passed, {skipped} skipped (why: above), {failed} failed"
          + (f", {len(vacuous)} ran nothing" if vacuous else ""))
    return 1 if vacuous else 0


if __name__ == "__main__":
    sys.exit(main())
