#!/usr/bin/env python3
"""tools/binary_sections.py BINARY [BINARY ...]: what an ELF binary is made of, its sections grouped.

Reads `readelf -S --wide` and sums the sections' sizes into four groups: debug information
(.debug_*), CUDA kernels (.nv_fatbin), host code (.text) and the rest (data, symbols,
relocations). Sizes in MB of 2^20 bytes, the unit of `du -m` (tools/first_build.sh's sizes).
docs/cpu-runs/first-build/tutorial-binary-sections.txt is its output for one tutorial, linked
as the build links it and again with its debug sections uncompressed.
"""
import os
import subprocess
import sys

GROUPS = (
    ("debug information (.debug_*)", lambda name: name.startswith(".debug_")),
    ("CUDA kernels (.nv_fatbin)", lambda name: name == ".nv_fatbin"),
    ("host code (.text)", lambda name: name == ".text"),
    ("the rest (data, symbols, relocations)", lambda name: True),
)


def section_sizes(binary):
    """(name, size in bytes) of every section readelf lists, NOBITS (.bss: no bytes in the file) left out."""
    out = subprocess.run(["readelf", "-S", "--wide", binary], check=True, capture_output=True, text=True).stdout
    sizes = []
    for line in out.splitlines():
        if not line.lstrip().startswith("["):
            continue
        fields = line.split("]", 1)[1].split()
        if len(fields) < 5 or fields[0] == "Name":
            continue
        name, kind, size = fields[0], fields[1], int(fields[4], 16)
        if kind != "NOBITS":
            sizes.append((name, size))
    return sizes


def main(binaries):
    if not binaries:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        return 2
    for binary in binaries:
        total = os.path.getsize(binary)
        grouped = {label: 0 for label, _ in GROUPS}
        for name, size in section_sizes(binary):
            label = next(label for label, matches in GROUPS if matches(name))
            grouped[label] += size
        print(f"{binary}: {total / 2**20:.1f} MB")
        for label, size in grouped.items():
            print(f"  {size / 2**20:7.1f} MB  {label}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
