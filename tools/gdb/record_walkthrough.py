#!/usr/bin/env python3
"""tools/gdb/record_walkthrough.py: prints the README's gdb session as gdb prints it at a terminal.

    python3 tools/gdb/record_walkthrough.py > /tmp/session.txt   # from the checkout, after `make debug`

Takes the gdb command line and the "(gdb) " commands of the README block that holds
"(gdb) bt", runs them in gdb on a pseudo-terminal 120 columns wide, and prints the
block's new text: the two "$ " lines, then everything gdb printed, with the
checkout's absolute path written /path/to/tensorscope and trailing spaces removed.
Paste it over the block; tests/gdb_walkthrough.py checks the result.
"""
import fcntl
import os
import pty
import re
import select
import shlex
import struct
import sys
import termios
import time

COLUMNS = 120
CHECKOUT = "/path/to/tensorscope"
PROMPT = b"(gdb) "


def readme_block(readme="README.md"):
    with open(readme) as f:
        blocks = re.findall(r"```[^\n]*\n(.*?)```", f.read(), flags=re.S)
    return next(b.splitlines() for b in blocks if "(gdb) bt" in b.splitlines())


def read_until_prompt(fd, timeout=120):
    out = b""
    deadline = time.time() + timeout
    while not out.endswith(PROMPT) and time.time() < deadline:
        if select.select([fd], [], [], 0.2)[0]:
            try:
                out += os.read(fd, 65536)
            except OSError:  # gdb exited
                break
    return out


def record(gdb_argv, commands):
    pid, fd = pty.fork()
    if pid == 0:
        os.environ["TERM"] = "dumb"  # no colours
        os.execvp(gdb_argv[0], gdb_argv)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 50, COLUMNS, 0, 0))
    out = read_until_prompt(fd)
    for command in commands:
        os.write(fd, command.encode() + b"\n")
        out += read_until_prompt(fd)
    os.write(fd, b"kill\n")
    os.write(fd, b"y\n")
    os.write(fd, b"quit\n")
    os.waitpid(pid, 0)
    return out.decode(errors="replace").replace("\r\n", "\n")


def main():
    block = readme_block()
    start = next(i for i, line in enumerate(block) if line.startswith("$ gdb "))
    gdb_argv = [os.path.expandvars(word) for word in shlex.split(block[start][2:])]
    commands = [line[len("(gdb) "):] for line in block[start:] if line.startswith("(gdb) ")]
    text = record(gdb_argv, commands).replace(os.getcwd(), CHECKOUT)
    lines = [line.rstrip() for line in text.splitlines()]
    if lines and lines[-1] == PROMPT.decode().rstrip():
        lines.pop()
    print("\n".join(block[:start + 1] + lines))


if __name__ == "__main__":
    sys.exit(main())
