#!/usr/bin/env python3
"""tools/build_times.py BUILD_DIR...: what a build cost, from Ninja's own log (BUILD_DIR/.ninja_log).

For each build folder: its CUDA architectures (CMakeCache.txt), the wall time from the first job's
start to the last one's end, and the compile time summed over the CUDA objects (.cu), the C++
objects and the links. The sums are the CPU time the jobs took (they overlap on several cores);
their ratio between two builds of the same code is what one choice of architectures costs against
another. Only the last run of each output counts (an incremental rebuild replaces its entries).

    python3 tools/build_times.py build/dev build/sanitize
"""
import pathlib
import sys


def architectures(build: pathlib.Path) -> str:
    cache = build / "CMakeCache.txt"
    if not cache.exists():
        return "?"
    for line in cache.read_text().splitlines():
        if line.startswith("CMAKE_CUDA_ARCHITECTURES:"):
            return line.split("=", 1)[1]
        if line.startswith("TS_CUDA:") and line.endswith("=OFF"):
            return "none (TS_CUDA=OFF)"
    return "none (no CUDA toolkit)"


def summarize(build: pathlib.Path) -> str:
    log = build / ".ninja_log"
    if not log.exists():
        return f"{build}: no .ninja_log (not built with Ninja?)"
    jobs = {}  # output -> (start ms, end ms), the last run of each
    for line in log.read_text().splitlines():
        if line.startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) < 4:
            continue
        jobs[fields[3]] = (int(fields[0]), int(fields[1]))
    if not jobs:
        return f"{build}: an empty .ninja_log"
    sums = {"cuda": 0, "cxx": 0, "link": 0}
    counts = dict.fromkeys(sums, 0)
    for output, (start, end) in jobs.items():
        kind = "cuda" if output.endswith(".cu.o") else "cxx" if output.endswith(".cpp.o") else "link"
        sums[kind] += end - start
        counts[kind] += 1
    wall = max(e for _, e in jobs.values()) - min(s for s, _ in jobs.values())
    return (f"{build}: CUDA architectures {architectures(build)}\n"
            f"  wall {wall / 1000:.0f} s (first job start to last job end)\n"
            f"  CUDA objects {counts['cuda']:3d}: {sums['cuda'] / 1000:7.0f} s of compile time\n"
            f"  C++ objects  {counts['cxx']:3d}: {sums['cxx'] / 1000:7.0f} s\n"
            f"  links and the rest {counts['link']:3d}: {sums['link'] / 1000:7.0f} s")


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    for arg in sys.argv[1:]:
        print(summarize(pathlib.Path(arg)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
