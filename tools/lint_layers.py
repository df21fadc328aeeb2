#!/usr/bin/env python3
"""Fails when a folder includes from a layer above it.

The layers, bottom to top: tensor < profiler < ops < nn < (tutorials, bench, tests, tools).
A file may include its own layer and the layers below it, never one above: the
profiler knows no op, the tensor knows neither.

Usage: lint_layers.py [ROOT]   (prints each offending include; exit 1 if any)
"""
import pathlib
import re
import sys

LAYERS = ["tensor", "profiler", "ops", "nn"]  # each may include only itself and those before it
SOURCES = (".h", ".cpp", ".cu", ".cuh")


def main(root):
    root = pathlib.Path(root)
    bad = 0
    for level, layer in enumerate(LAYERS):
        above = set(LAYERS[level + 1:]) | {"tutorials", "bench", "tests", "tools"}
        for path in sorted((root / layer).rglob("*")):
            if path.suffix not in SOURCES:
                continue
            for number, line in enumerate(path.read_text().splitlines(), 1):
                match = re.match(r'\s*#\s*include\s+"([a-z_]+)/', line)
                if match and match.group(1) in above:
                    print(f"{path.relative_to(root)}:{number}: {layer}/ includes {match.group(1)}/, a layer above it")
                    bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
