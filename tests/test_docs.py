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
  links   every relative link of every tracked Markdown page (README.md, tutorials/*.md, the
          READMEs) leads to a file that exists, and its #anchor to a heading of the page it names
          (GitHub's anchors: the heading in lower case, punctuation dropped, spaces as hyphens, a
          repeated heading's anchor suffixed -1, -2, ...) or to an <a id="..."> there; links to
          web addresses are not followed, code blocks and `code spans` are not read
  pages   every walk-through (tutorials/NN_*.md) reads in one sitting: at most 360 lines (about 350)
          and no line over 140 characters (a wide table's excerpt leaves columns out with "…")
  self    the checks catch what they are for, on a made-up tree (a renamed kernel, a stray file,
          a link to a missing file, to a missing heading, a page too long and a line too wide)

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


MD_LINK = re.compile(r"(?<!!)\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
MD_IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)\)")


def heading_anchor(heading):
    """GitHub's anchor of a Markdown heading: lower case, inline markup and punctuation dropped, spaces as hyphens."""
    text = re.sub(r"<[^>]+>", "", heading).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def page_anchors(text):
    """Every anchor a page offers: its headings' (outside code blocks), repeats suffixed, and its <a id>s."""
    anchors, seen, in_code = set(), {}, False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            in_code = not in_code
            continue
        if in_code:
            continue
        heading = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if heading:
            anchor = heading_anchor(heading.group(1))
            n = seen.get(anchor, 0)
            seen[anchor] = n + 1
            anchors.add(anchor if n == 0 else f"{anchor}-{n}")
        anchors.update(re.findall(r"<a\s+(?:id|name)=\"([^\"]+)\"", line))
    return anchors


def check_links(root, files):
    """Each relative link of each tracked page: its file exists, its anchor is a heading there."""
    failures, anchors_of = [], {}
    for page in sorted(f for f in files if f.endswith(".md")):
        text = re.sub(r"```.*?```", "", read(root, page), flags=re.S)
        text = re.sub(r"`[^`\n]*`", "", text)
        for target in [m.group(1) for m in MD_LINK.finditer(text)] + [m.group(1) for m in MD_IMAGE.finditer(text)]:
            if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
                continue
            path, _, anchor = target.partition("#")
            linked = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
            if not os.path.exists(os.path.join(root, linked)):
                failures.append(f"{page}: the link ({target}) leads to no file ({linked})")
                continue
            if anchor and linked.endswith(".md"):
                if linked not in anchors_of:
                    anchors_of[linked] = page_anchors(read(root, linked))
                if anchor not in anchors_of[linked]:
                    failures.append(f"{page}: the link ({target}) names no heading of {linked}")
    return failures


WALKTHROUGH = re.compile(r"tutorials/[0-9][0-9]_[^/]*\.md$")
MAX_LINES, MAX_WIDTH = 360, 140


def check_pages(root, files):
    """Each walk-through's length and the width of each of its lines (in characters)."""
    failures = []
    for path in files:
        if not WALKTHROUGH.match(path):
            continue
        lines = read(root, path).splitlines()
        if len(lines) > MAX_LINES:
            failures.append(f"{path}: {len(lines)} lines, more than {MAX_LINES}: split it (one sitting each)")
        for number, line in enumerate(lines, 1):
            if len(line) > MAX_WIDTH:
                failures.append(f"{path}:{number}: {len(line)} characters, more than {MAX_WIDTH}")
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
        write("guide/a.md", "# A page\n## Step 1: `make` it\n## Step 1: `make` it\n<a id=\"here\"></a>\n"
                            "[ok](#step-1-make-it-1) [ok](b.md#b) [ok](#here) [web](https://x.org/#y)\n"
                            "`[not a link](gone.md)`\n```\n[not a link](gone.md)\n```\n"
                            "[broken](gone.md) [broken](b.md#nowhere) [broken](#step-1-make-it-2)\n")
        write("guide/b.md", "# B\n")
        write("tutorials/01_long.md", "line\n" * (MAX_LINES + 1))
        write("tutorials/02_wide.md", "# Wide\n" + "x" * MAX_WIDTH + "\n" + "\u2026" * (MAX_WIDTH + 1) + "\n")
        write("tutorials/words.md", "x" * (MAX_WIDTH + 1) + "\n")  # not a walk-through
        for cmd in (["init", "-q"], ["add", "."]):
            subprocess.run(["git", "-C", tmp, *cmd], check=True, capture_output=True)
        files = tracked(tmp)
        names = check_names(tmp, files)
        named = check_named(tmp, files)
        links = check_links(tmp, files)
        pages = check_pages(tmp, files)
    expect = [
        (names, "docs/runs/b.json", "ts::add_old_kernel"),  # in a comment only: not defined
        (names, "docs/runs/b.json", "add/cuda/rows"),
        (names, "docs/runs/a.json", "ts::AddOp"),  # a functor the code does not define
        (named, "docs/stray.txt", "named by no page"),
        (named, "docs/README.md", "`gone/<x>.txt` names no file"),
        (links, "guide/a.md", "(gone.md) leads to no file"),
        (links, "guide/a.md", "(b.md#nowhere) names no heading"),
        (links, "guide/a.md", "(#step-1-make-it-2) names no heading"),
        (pages, "tutorials/01_long.md", f"{MAX_LINES + 1} lines"),
        (pages, "tutorials/02_wide.md:3", f"{MAX_WIDTH + 1} characters"),
    ]
    failures = []
    for found, path, what in expect:
        if not any(line.startswith(path) and what in line for line in found):
            failures.append(f"self-test: expected a failure for {path} naming {what}; got {found}")
    if any(line.startswith(("docs/runs/a.steps.txt", "docs/runs/a.json: named")) for line in names + named):
        failures.append(f"self-test: a file that holds to the code and is named failed: {names + named}")
    if len(names) != 2 or len(named) != 2 or len(links) != 3 or len(pages) != 2:
        failures.append(f"self-test: expected 2 + 2 + 3 + 2 failures, got {names}, {named}, {links} and {pages}")
    return failures


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in ("names", "named", "links", "pages", "self"):
        print("usage: test_docs.py ROOT names|named|links|pages|self", file=sys.stderr)
        return 2
    root, case = sys.argv[1], sys.argv[2]
    if case == "self":
        failures = self_test()
    else:
        files = tracked(root)
        failures = {"names": check_names, "named": check_named, "links": check_links,
                    "pages": check_pages}[case](root, files)
    for line in failures:
        print(line)
    print(f"test_docs.py {case}: {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
