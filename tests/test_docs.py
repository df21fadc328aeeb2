#!/usr/bin/env python3
"""tests/test_docs.py ROOT CASE: the committed outputs under docs/ hold to today's code and to the pages.

  names   every `ts::` name a committed trace, table or log shows (an op, a kernel, a functor a
          kernel is instantiated with) and every rung name (`op/device/rung`) is defined by the
          code today: a trace written before a kernel was renamed fails here, naming the file
  named   every file under docs/ is named by something: a page, a test, a script, another
          committed output (a run's log names the traces it wrote), or a README.md under docs/:
          docs/README.md, the index, names each folder (`ladder/`: its README.md), and each folder's
          README names its files, `<placeholder>` patterns naming families (`<config>.steps.txt`,
          `traces/<config>.{json,txt}`); every path a README names must name at least one file
  self    the two checks catch what they are for, on a made-up tree (a renamed kernel, a stray file)

Only tracked files count (git ls-files; every file outside build/ in a checkout without git): a
scratch output in the checkout is nobody's evidence.
Exit status 0 when every check passes; each failure is one line naming the file.
"""
import fnmatch
import os
import re
import subprocess
import sys
import tempfile

CODE_DIRS = ("tensor/", "profiler/", "ops/", "nn/", "bench/", "tutorials/", "tools/")
CODE_EXT = (".cpp", ".cu", ".h", ".cuh")
# Files whose text is read for mentions of docs/ files (JSON and SVG are outputs, not pages; a trace
# that names its own folder is no reference).
TEXT_EXT = (".md", ".txt", ".cpp", ".cu", ".h", ".cuh", ".py", ".sh", ".cmake", ".log", ".jsonl", ".json",
            ".in", ".yml", ".yaml", "")
DOC_EXT = {".txt", ".json", ".jsonl", ".md", ".log", ".svg", ".sh", ".py", ".csv", ".gz", ".tgz"}
RUNG = re.compile(r"\b([a-z_][a-z0-9_]*)/(cpu|cuda|any)/([a-z0-9_]+)\b(?!/)")  # not a bench entry: matmul/cpu/f32/1024
TS_NAME = re.compile(r"\bts::((?:[A-Za-z_]\w*::)*[A-Za-z_]\w*)")


def tracked(root):
    """The checkout's files: git's list, or outside a git checkout (a source archive) every file but build/'s."""
    r = subprocess.run(["git", "-C", root, "ls-files", "-z"], capture_output=True, text=True)
    if r.returncode == 0:
        return [f for f in r.stdout.split("\0") if f and os.path.isfile(os.path.join(root, f))]
    files = []
    for here, dirs, names in os.walk(root):
        rel = os.path.relpath(here, root)
        dirs[:] = [d for d in dirs if not (rel == "." and d in ("build", "traces", ".git"))]
        files += [os.path.normpath(os.path.join(rel, n)) for n in names]
    return sorted(files)


def read(root, path):
    with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
        return f.read()


def strip_comments(code):
    code = re.sub(r"/\*.*?\*/", " ", code, flags=re.S)
    return re.sub(r"//[^\n]*", " ", code)


def code_vocabulary(root, files):
    """The identifiers and string literals of the library's code, comments left out."""
    words, literals = set(), set()
    for f in files:
        if f.startswith(CODE_DIRS) and f.endswith(CODE_EXT):
            code = strip_comments(read(root, f))
            words.update(re.findall(r"[A-Za-z_]\w*", code))
            literals.update(re.findall(r'"([^"\\\n]*)"', code))
    return words, literals


def check_names(root, files):
    words, literals = code_vocabulary(root, files)
    rungs = {m.group(0) for lit in literals for m in [RUNG.fullmatch(lit)] if m}
    failures = []
    for f in files:
        if not f.startswith("docs/") or f.endswith(".svg") or "pytorch-reference/" in f:
            continue
        text = read(root, f)
        unknown = set()
        for m in TS_NAME.finditer(text):
            last = m.group(1).split("::")[-1]
            # A trace's readings cut long names at a fixed width: a cut name is the start of a defined one.
            cut = m.end() == len(text) or text[m.end()] in " \n"
            if last not in words and not (cut and any(w.startswith(last) for w in words)):
                unknown.add("ts::" + m.group(1))
        for m in RUNG.finditer(text):
            op = m.group(1)
            # Only a rung of an op the code defines is checked: "cpu/any/..." prose is not a rung name.
            if ("ts::" + op) in literals and m.group(0) not in rungs:
                unknown.add(m.group(0))
        if unknown:
            failures.append(f"{f}: names {', '.join(sorted(unknown))}, which the code does not define "
                            "(an output of older code: run the script that writes it again)")
    return failures


def expand_braces(span):
    """`a.{json,txt}` -> [`a.json`, `a.txt`] (one level, as the READMEs write it)."""
    m = re.search(r"\{([^{}]*)\}", span)
    if not m:
        return [span]
    return [x for alt in m.group(1).split(",") for x in expand_braces(span[:m.start()] + alt + span[m.end():])]


def readme_patterns(root, docs):
    """What each README.md under docs/ names in backticks, as (readme, span, pattern relative to docs/'s
    parent): paths relative to the README's folder (or from docs/), `<placeholder>` a wildcard; a
    folder (`ladder/`) names that folder's README.md."""
    patterns = []
    for readme in docs:
        if not readme.endswith("README.md"):
            continue
        here = os.path.dirname(readme)
        for span in re.findall(r"`([^`\n]+)`", read(root, readme)):
            span = span.strip()
            if " " in span or not re.fullmatch(r"[\w./<>{},*+-]+", span):
                continue  # a command or code, not a path
            for alt in expand_braces(span):
                if not (alt.endswith("/") or os.path.splitext(alt)[1] in DOC_EXT):
                    continue  # `torch.add`, `ts::add`: not a file
                pattern = re.sub(r"<[^<>]+>", "*", alt)
                if pattern.replace("*", "").strip("/.") == "":
                    continue  # a pattern that names everything names nothing
                if pattern.startswith("/"):
                    continue  # a path on the machine that ran it
                folder = pattern.endswith("/")
                pattern = pattern.rstrip("/")
                if not pattern.startswith("docs/"):
                    pattern = os.path.normpath(os.path.join(here, pattern))
                patterns.append((readme, span, pattern + ("/README.md" if folder else ""), folder))
    return patterns


def check_named(root, files):
    docs = [f for f in files if f.startswith("docs/")]
    pages = {f: read(root, f) for f in files if f.endswith(TEXT_EXT) and not f.endswith(".svg")}
    patterns = readme_patterns(root, docs)
    failures = []
    used = set()
    for d in docs:
        if d == "docs/README.md":
            continue
        hits = [(readme, span) for readme, span, pattern, _ in patterns if readme != d and fnmatch.fnmatchcase(d, pattern)]
        used.update(hits)
        if hits:
            continue
        named = False
        for f, text in pages.items():
            if f == d:
                continue
            here = os.path.dirname(f)
            if d in text or (here.startswith("docs") and d.startswith(here + "/") and
                             os.path.relpath(d, here) in text):
                named = True
                break
        if not named:
            failures.append(f"{d}: named by no page, test, script, committed output or README under docs/ "
                            "(name it where it is used, or delete it)")
    # The index itself must stay true: each path it names is there (a folder's README.md, or a file).
    # A folder's README may name files elsewhere in the tree in passing (`tutorials/04_attention.md`).
    # A span that is a file of the repository outside docs/ (`tools/gpu_check.sh`, `refresh_walkthroughs.sh`)
    # is a reference, not a row; a folder's row holds while the folder has files.
    names = {os.path.basename(f) for f in files}
    for readme, span, pattern, folder in patterns:
        if readme != "docs/README.md" or (readme, span) in used:
            continue
        if folder and any(d.startswith(pattern[:-len("README.md")]) for d in docs):
            continue
        if any(fnmatch.fnmatchcase(f, span) for f in files) or os.path.basename(span) in names:
            continue
        if not any(fnmatch.fnmatchcase(d, pattern) for d in docs):
            failures.append(f"{readme}: `{span}` names no file under docs/")
    return failures


def self_test():
    """Both checks on a made-up checkout: a renamed kernel and a stray file must fail, the rest pass."""
    with tempfile.TemporaryDirectory() as tmp:
        def write(path, text):
            os.makedirs(os.path.dirname(os.path.join(tmp, path)), exist_ok=True)
            with open(os.path.join(tmp, path), "w") as f:
                f.write(text)
        write("ops/add/add.cu", '__global__ void add_vec16_kernel() {}\n// add_old_kernel was here\n'
                                'const Variant r[] = {{"add/cuda/vec16"}};\nOpDef d{.name = "ts::add"};\n')
        write("docs/README.md", "| `runs/` | runs |\n| `gone/<x>.txt` | nothing |\n")
        write("docs/runs/README.md", "| `<config>.{steps,kernels}.txt` | readings |\n")
        write("docs/runs/a.json", '{"name": "void ts::add_vec16_kernel<ts::AddOp>()"}')
        write("docs/runs/a.steps.txt", "ts::add  add/cuda/vec16  ts::add_vec16_kernel\n")
        write("docs/runs/b.json", '{"name": "ts::add_old_kernel", "rung": "add/cuda/rows"}')
        write("docs/stray.txt", "nothing names me\n")
        write("tests/t.py", "docs/runs/a.json docs/runs/b.json\n")
        for cmd in (["init", "-q"], ["add", "."]):
            subprocess.run(["git", "-C", tmp, *cmd], check=True, capture_output=True)
        files = tracked(tmp)
        names = check_names(tmp, files)
        named = check_named(tmp, files)
    expect = [
        (names, "docs/runs/b.json", "ts::add_old_kernel"),  # in a comment only: not defined
        (names, "docs/runs/b.json", "add/cuda/rows"),
        (names, "docs/runs/a.json", "ts::AddOp"),  # a functor the code does not define
        (named, "docs/stray.txt", "named by no page"),
        (named, "docs/README.md", "`gone/<x>.txt` names no file"),
    ]
    failures = []
    for found, path, what in expect:
        if not any(line.startswith(path) and what in line for line in found):
            failures.append(f"self-test: expected a failure for {path} naming {what}; got {found}")
    if any(line.startswith(("docs/runs/a.steps.txt", "docs/runs/a.json: named")) for line in names + named):
        failures.append(f"self-test: a file that holds to the code and is named failed: {names + named}")
    if len(names) != 2 or len(named) != 2:
        failures.append(f"self-test: expected 2 + 2 failures, got {names} and {named}")
    return failures


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in ("names", "named", "self"):
        print("usage: test_docs.py ROOT names|named|self", file=sys.stderr)
        return 2
    root, case = sys.argv[1], sys.argv[2]
    if case == "self":
        failures = self_test()
    else:
        files = tracked(root)
        failures = check_names(root, files) if case == "names" else check_named(root, files)
    for line in failures:
        print(line)
    print(f"test_docs.py {case}: {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
