#!/usr/bin/env python3
"""Fails on a kernel launch whose failure nothing would report.

A kernel in ops/ launches either through ts::launch (ops/cuda_common.cuh), which
keeps the launch's error for the dispatcher, or with chevrons,
kernel<<<grid, block>>>(args...); and then TS_CHECK_LAUNCH(); as the very next
statement. A chevron launch without it would drop its error: the op would
report success and the next op would inherit the failure.

Usage: lint_kernel_launches.py DIR...   (prints each offending launch; exit 1 if any)
"""
import pathlib
import re
import sys


def strip_comments(text):
    """Blanks // and /* */ comments (keeping newlines, so line numbers hold)."""
    def blank(match):
        return re.sub(r"[^\n]", " ", match.group(0))
    return re.sub(r"//[^\n]*|/\*.*?\*/", blank, text, flags=re.S)


def unchecked_launches(text):
    code = strip_comments(text)
    for launch in re.finditer(r"<<<", code):
        end = code.find(";", code.find(">>>", launch.end()))  # the launch statement ends at its ';'
        following = code[end + 1:].lstrip()
        if end < 0 or not following.startswith("TS_CHECK_LAUNCH()"):
            yield code.count("\n", 0, launch.start()) + 1


def main(dirs):
    bad = 0
    for root in dirs:
        for path in sorted(pathlib.Path(root).rglob("*")):
            if path.suffix not in (".cu", ".cuh"):
                continue
            for line in unchecked_launches(path.read_text()):
                print(f"{path}:{line}: a <<<...>>> launch must be followed by TS_CHECK_LAUNCH(); "
                      "(or launch with ts::launch)")
                bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or ["ops"]))
