#!/usr/bin/env python3
"""tests/gdb_walkthrough.py: the README's gdb walk-through must be what gdb prints.

    python3 tests/gdb_walkthrough.py --readme README.md \\
        --binary build/debug/tutorials/00_tensors_and_views --source-dir .

Reads the fenced block of README.md that holds "(gdb) bt", runs its gdb commands
up to that bt (break add_cpu_ref, run, ...) in batch mode on the debug build of
tutorial 00 (with --device cpu), and compares every frame: the function name and the file:line. Prints both backtraces
side by side and exits 1 when they differ. Exits 77 (ctest's skip code for this
test) with the reason when it cannot check: no gdb, no debug build (`make debug`),
or a machine where gdb may not run a program (ptrace refused).
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

SKIP = 77
FRAME = re.compile(r"^#(\d+)\s+(?:0x[0-9a-fA-F]+ in )?(.+?) \(")
LOCATION = re.compile(r" at (\S+):(\d+)\s*$")


def skip(reason):
    print(f"gdb_walkthrough: skipped: {reason}")
    sys.exit(SKIP)


def frames_of(lines):
    """[(number, function, file, line)] from backtrace lines; continuation lines join their frame."""
    joined = []
    for line in lines:
        if line.startswith("#"):
            joined.append(line.rstrip())
        elif joined and line.startswith(" "):
            joined[-1] += " " + line.strip()
    frames = []
    for text in joined:
        m = FRAME.match(text)
        if not m:
            continue
        loc = LOCATION.search(text)
        frames.append((int(m.group(1)), m.group(2), loc.group(1) if loc else None, int(loc.group(2)) if loc else None))
    return frames


def readme_walkthrough(readme):
    """The gdb commands of the README's walk-through up to its "bt", and the frames it shows after."""
    with open(readme) as f:
        text = f.read()
    for block in re.findall(r"```[^\n]*\n(.*?)```", text, flags=re.S):
        lines = block.splitlines()
        if "(gdb) bt" not in lines:
            continue
        bt = lines.index("(gdb) bt")
        commands = [line[len("(gdb) "):] for line in lines[:bt + 1] if line.startswith("(gdb) ")]
        after = lines[bt + 1:]
        end = next((i for i, line in enumerate(after) if line.startswith("(gdb)")), len(after))
        return commands, frames_of(after[:end])
    sys.exit(f"gdb_walkthrough: {readme} has no fenced block with a '(gdb) bt' line")


def gdb_frames(binary, source_dir, commands):
    gdb = shutil.which("gdb")
    if gdb is None:
        skip("gdb is not installed (apt-get install gdb)")
    if not os.path.exists(binary):
        skip(f"no debug build of tutorial 00 at {binary} (run `make debug`)")
    # The README's commands, in its order; `run` gets --device cpu (the README's machine had no GPU).
    cmd = [gdb, "-batch", "-nx", "-iex", f"add-auto-load-safe-path {source_dir}", "-ex", "set width 0",
           "-ex", "set pagination off"]
    for command in commands:
        cmd += ["-ex", command]
    cmd += ["--args", binary, "--device", "cpu"]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    output = result.stdout + result.stderr
    if "ptrace: Operation not permitted" in output or "Could not trace the inferior process" in output:
        skip("gdb may not run a program on this machine (ptrace refused)")
    frames = frames_of(output.splitlines())
    if not frames:
        print(output)
        sys.exit("gdb_walkthrough: gdb printed no backtrace (did the breakpoint at add_cpu_ref hit?)")
    return frames


def same_file(gdb_path, readme_path):
    """gdb prints the path the compiler recorded (absolute, or relative to the build folder)."""
    if gdb_path is None or readme_path is None:
        return gdb_path == readme_path
    return os.path.normpath(gdb_path) == readme_path or os.path.normpath(gdb_path).endswith("/" + readme_path)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--readme", required=True)
    parser.add_argument("--binary", required=True, help="the debug build of 00_tensors_and_views")
    parser.add_argument("--source-dir", required=True)
    args = parser.parse_args()

    commands, want = readme_walkthrough(args.readme)
    print(f"gdb_walkthrough: the README's commands: {'; '.join(commands)}")
    got = gdb_frames(args.binary, os.path.abspath(args.source_dir), commands)
    errors = []
    show = lambda f: f"{f[1]} at {f[2]}:{f[3]}" if f else "-"  # noqa: E731
    width = max(len(show(f)) for f in want + [None]) + 2
    print(f"{'frame':<6}{'README':<{width}}gdb")
    for i in range(max(len(want), len(got))):
        w = want[i] if i < len(want) else None
        g = got[i] if i < len(got) else None
        print(f"#{i:<5}{show(w):<{width}}{show(g)}")
        if w is None or g is None:
            errors.append(f"frame #{i}: only in {'gdb' if w is None else 'the README'}")
        elif w[1] != g[1]:
            errors.append(f"frame #{i}: function {w[1]} in the README, {g[1]} in gdb")
        elif not same_file(g[2], w[2]) or w[3] != g[3]:
            errors.append(f"frame #{i} ({w[1]}): {w[2]}:{w[3]} in the README, {g[2]}:{g[3]} in gdb")
    for e in errors:
        print(f"  error: {e}")
    if errors:
        print("FAILED: the README's gdb walk-through does not match this build "
              f"({args.binary}; rebuild it with `make debug` if it is older than the sources)")
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
