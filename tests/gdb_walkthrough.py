#!/usr/bin/env python3
"""tests/gdb_walkthrough.py: the README's gdb walk-through must be what gdb prints.

    python3 tests/gdb_walkthrough.py --readme README.md \\
        --binary build/debug/tutorials/00_tensors_and_views --source-dir .

Two checks, on the debug build of tutorial 00:

1. The README's session. Reads the fenced block of README.md that holds "(gdb) bt",
   runs its gdb commands (break add_cpu_ref, run ..., next, bt, ...) in one gdb session
   and compares what gdb prints after each command with what the README shows after
   it, line by line: the breakpoint's stop line with every argument, each frame's
   function, arguments and file:line, each printed value. Before comparing, both sides
   are normalized (see `normalize`): gdb's long lines are joined, the checkout's path
   reads /path/to/tensorscope, hex addresses and thread ids are not compared, nor are
   lines about the host's thread library, nor values read from memory the program has
   not written yet (the kernel's arguments at the breakpoint, `out`'s elements before
   the kernel writes them). Fails too when gdb's output holds a Python exception or an
   error of gdb or of the pretty-printer (ERROR_MARKERS), or a ts::Tensor that is not
   in one of the printer's forms.
2. The printer on tensors that hold garbage: runs tools/gdb/check_printer.py in gdb,
   which breaks one field of a copy of a live tensor at a time and checks the short
   form the printer gives (`ts::Tensor <invalid: dtype 37 is not a dtype>`, ...).

Exits 1 when a check fails, 77 (ctest's skip code for this test) with the reason when
it cannot check: no gdb, no debug build (`make debug`), or a machine where gdb may not
run a program (ptrace refused).
"""
import argparse
import difflib
import os
import re
import shlex
import shutil
import subprocess
import sys

SKIP = 77
CHECKOUT = "/path/to/tensorscope"  # how the README writes the absolute path of the checkout
MARK = "@@gdb_walkthrough command {}@@"
ERROR_MARKERS = ("Python Exception", "Traceback", "<error reading", "<error:", "<printer error")
# Lines that depend on the host, not on tensorscope: its thread library, the threads and
# children the program starts, gdb's debuginfod, and gdb's warnings where a container
# forbids turning address randomization off or there is no $HOME for gdb's cache.
HOST_LINES = re.compile(r"^(\[Thread debugging using libthread_db|Using host libthread_db|\[New Thread |"
                        r"\[Thread .* exited\]|\[Detaching after v?fork|Download failed|.*debuginfod|"
                        r"warning: Error disabling address space randomization|"
                        r".*warning: Couldn't determine a path for the index cache directory)")
# The printer's two forms: a tensor, or a short "<...>" that says why there is none.
TENSOR = re.compile(r"ts::Tensor (?:<[^<>]*>|shape \[[-\d, ]*\] strides \[[-\d, ]*\] offset \d+ \w+ [\w:]+  "
                    r"(?:\[[^\[\]]*\]|<device memory at 0x[0-9a-f]+>))")


def skip(reason):
    print(f"gdb_walkthrough: skipped: {reason}")
    sys.exit(SKIP)


# ---- the README's side ------------------------------------------------------------


def readme_session(readme):
    """(gdb command line, [(command, lines the README shows after it)]) of the walk-through block.

    The gdb command line is the block's "$ gdb ..." line; the lines between it and the
    first "(gdb) " prompt are gdb's start-up output, listed under the command None.
    """
    with open(readme) as f:
        text = f.read()
    for block in re.findall(r"```[^\n]*\n(.*?)```", text, flags=re.S):
        lines = block.splitlines()
        if "(gdb) bt" not in lines:
            continue
        start = next((i for i, line in enumerate(lines) if line.startswith("$ gdb ")), None)
        if start is None:
            sys.exit(f"gdb_walkthrough: the walk-through block of {readme} has no '$ gdb ...' line")
        session = [(None, [])]
        for line in lines[start + 1:]:
            if line.startswith("(gdb) "):
                session.append((line[len("(gdb) "):], []))
            else:
                session[-1][1].append(line)
        return lines[start][2:], session
    sys.exit(f"gdb_walkthrough: {readme} has no fenced block with a '(gdb) bt' line")


def readme_binary(gdb_line):
    """The program the README's gdb line debugs: its last word that is not an option."""
    words = [w for w in shlex.split(gdb_line)[1:] if not w.startswith("$")]
    return [w for w in words if not w.startswith("-") and "/" in w][-1]


def require_first_breakpoint(commands):
    """The walk-through starts as a learner does: `break add_cpu_ref`, `run ...`, and has a `bt`."""
    starts = len(commands) >= 2 and commands[0] == "break add_cpu_ref" and commands[1].split()[0] == "run"
    if not starts or "bt" not in commands:
        sys.exit("gdb_walkthrough: the README's session must start with `break add_cpu_ref`, `run ...` and hold "
                 f"a `bt`; it has: {'; '.join(commands)}")


# ---- gdb's side --------------------------------------------------------------------


def run_gdb(args, cwd, timeout=240):
    result = subprocess.run(args, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, timeout=timeout)
    if "ptrace: Operation not permitted" in result.stdout or "Could not trace the inferior" in result.stdout:
        skip("gdb may not run a program on this machine (ptrace refused)")
    return result.stdout


def gdb_session(gdb, binary, source_dir, commands):
    """[(command, lines gdb printed after it)], with None for the start-up output.

    Runs gdb in the checkout, as the README does, with the commands as -ex options,
    not in batch mode, so that gdb prints what it prints at a terminal ("Starting
    program: ...", "Run till exit from ..."); stdin is empty, so gdb quits after the
    last one. A marker echoed before each command, and after the last, splits the output.
    """
    cmd = [gdb, "-q", "-nx", "-iex", f"add-auto-load-safe-path {source_dir}", "-iex", "set width 0",
           "-iex", "set height 0", "-iex", "set confirm off"]
    for i, command in enumerate(commands + ["quit"]):
        cmd += ["-ex", f"echo {MARK.format(i)}\\n", "-ex", command]
    output = run_gdb(cmd + [binary], cwd=source_dir)
    pieces = re.split(r"^@@gdb_walkthrough command (\d+)@@\n", output, flags=re.M)
    session = [(None, pieces[0].splitlines())]
    for i, text in zip(pieces[1::2], pieces[2::2]):
        if int(i) < len(commands):
            session.append((commands[int(i)], text.splitlines()))
    return output, session


# ---- comparing ---------------------------------------------------------------------


def logical_lines(lines):
    """gdb breaks a long frame line where the terminal ends and indents the rest: join them."""
    joined = []
    for line in lines:
        if joined and line[:1] in (" ", "\t") and joined[-1]:
            joined[-1] = re.sub(r"\( ", "(", joined[-1].rstrip() + " " + line.strip())
        else:
            joined.append(line.rstrip())
    return joined


def mask_unwritten(command, line):
    """Values gdb reads from memory the program has not written yet differ from run to run.

    At the stop of `run`, the kernel's first line, the arguments are not stored yet: a
    tensor argument reads whatever its stack slot held. `out` of add_cpu_ref is
    allocated but not written until the kernel runs: its shape is compared, its
    elements are not.
    """
    if command is not None and command.split()[0] == "run" and "Breakpoint " in line:
        line = re.sub(r"(\w+)=" + TENSOR.pattern, r"\1=ts::Tensor <not stored yet>", line)
    if "ts::add_cpu_ref (" in line:
        line = re.sub(r"(out=ts::Tensor shape .*? cpu  )\[[^\[\]]*\]", r"\1[not written yet]", line)
    return line


def normalize(command, lines, paths):
    """The lines as compared: host lines dropped, long lines joined, paths and addresses made alike."""
    out = []
    for line in logical_lines(lines):
        if HOST_LINES.match(line):
            continue
        for real, shown in paths:
            line = line.replace(real, shown)
        line = re.sub(r"0x[0-9a-f]+", "0x…", line)
        line = re.sub(r"\bLWP \d+", "LWP …", line)
        out.append(mask_unwritten(command, line))
    while out and not out[-1]:
        out.pop()
    return out


def printer_problems(output):
    """Lines of gdb's output with an error marker, or a ts::Tensor in none of the printer's forms."""
    problems = []
    for line in output.splitlines():
        if any(marker in line for marker in ERROR_MARKERS):
            problems.append(f"an error in gdb's output: {line.strip()}")
        if re.match(r"\d+\t", line):
            continue  # a source line: code, not a value
        for m in re.finditer(r"= ?(?=ts::Tensor)", line):  # a value: an argument's, or a print's
            if not TENSOR.match(line, m.end()):
                problems.append(f"a ts::Tensor in none of the printer's forms: {line[m.end():][:120]}")
    return problems


def compare_sessions(want, got, paths):
    """Unified diffs, one per command whose output differs."""
    diffs = []
    for i, (command, lines) in enumerate(want):
        g_lines = got[i][1] if i < len(got) else ["(gdb printed nothing here: did gdb stop early?)"]
        w = normalize(command, lines, [])
        g = normalize(command, g_lines, paths)
        if w != g:
            name = "start-up" if command is None else f"(gdb) {command}"
            diffs.append("\n".join(difflib.unified_diff(w, g, f"README after {name}", f"gdb after {name}",
                                                        lineterm="")))
    return diffs


def check_readme(args, gdb):
    gdb_line, want = readme_session(args.readme)
    commands = [command for command, _ in want[1:]]
    require_first_breakpoint(commands)
    print(f"gdb_walkthrough: the README's commands: {'; '.join(commands)}")
    source_dir = os.path.abspath(args.source_dir)
    shown_binary = readme_binary(gdb_line)
    binary = os.path.abspath(args.binary)
    if binary.startswith(source_dir + os.sep):
        binary = os.path.relpath(binary, source_dir)  # as the README's gdb line names it, from the checkout
    paths = [(os.path.abspath(args.binary), f"{CHECKOUT}/{shown_binary}"), (binary, shown_binary),
             (source_dir, CHECKOUT)]
    output, got = gdb_session(gdb, binary, source_dir, commands)
    errors = printer_problems(output) + compare_sessions(want, got, paths)
    for e in errors:
        print(e)
    if errors:
        print("FAILED: the README's gdb walk-through does not match this build "
              f"({args.binary}; rebuild it with `make debug` if it is older than the sources; "
              "`python3 tools/gdb/record_walkthrough.py` prints the session anew)")
        return False
    print(f"OK: gdb printed what the README shows after each of its {len(commands)} commands")
    return True


def check_printer(args, gdb):
    source_dir = os.path.abspath(args.source_dir)
    script = os.path.join(source_dir, "tools", "gdb", "check_printer.py")
    output = run_gdb([gdb, "-batch", "-nx", "-iex", f"add-auto-load-safe-path {source_dir}", "-x", script,
                      os.path.abspath(args.binary)], cwd=source_dir)
    results = [line for line in output.splitlines() if line.startswith(("ok ", "FAIL ", "check_printer: "))]
    summary = re.search(r"^check_printer: (\d+) cases, (\d+) failed$", output, flags=re.M)
    print("\n".join(results))
    if summary is None or summary.group(2) != "0" or any(line.startswith("FAIL") for line in results):
        if summary is None:
            print(output)  # the script stopped early: show why
        print(f"FAILED: the printer on tensors that hold garbage ({script})")
        return False
    print(f"OK: the printer gave the expected short form for all {summary.group(1)} garbage tensors")
    return True


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--readme", required=True)
    parser.add_argument("--binary", required=True, help="the debug build of 00_tensors_and_views")
    parser.add_argument("--source-dir", required=True)
    args = parser.parse_args()

    gdb = shutil.which("gdb")
    if gdb is None:
        skip("gdb is not installed (apt-get install gdb)")
    if not os.path.exists(args.binary):
        skip(f"no debug build of tutorial 00 at {args.binary} (run `make debug`)")
    readme_ok = check_readme(args, gdb)
    printer_ok = check_printer(args, gdb)
    return 0 if readme_ok and printer_ok else 1


if __name__ == "__main__":
    sys.exit(main())
