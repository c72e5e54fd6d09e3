#!/usr/bin/env python3
"""help_options.py PROGRAM [ARG...] -- OPTION...: fails, naming each, when an option that takes a
value in PROGRAM's --help (`--name VALUE`, VALUE in capitals: `--layer NAME`, `--shard I/N`) is not
among the OPTIONs given, or an OPTION is not in the help: the options tests/cli/CMakeLists.txt
enumerates are every value option of the program. ARGs come before --help (`show` for hot-tune's
show options)."""
import re
import subprocess
import sys


def main():
    if "--" not in sys.argv[2:]:
        print("usage: help_options.py PROGRAM [ARG...] -- OPTION...")
        return 2
    i = sys.argv.index("--", 2)
    prog, args, listed = sys.argv[1], sys.argv[2:i], set(sys.argv[i + 1:])
    p = subprocess.run([prog] + args + ["--help"], capture_output=True, timeout=60)
    text = p.stdout.decode("utf-8", "replace")
    if p.returncode != 0 or not text:
        print("FAIL: %s %s --help: exit %d, no help text" % (prog, " ".join(args), p.returncode))
        return 1
    found = set(re.findall(r"(--[a-z][a-z-]*) [A-Z]+(?:/[A-Z]+)?\b", text))
    bad = 0
    for opt in sorted(found - listed):
        print("FAIL: %s takes a value (--help) but tests/cli/CMakeLists.txt does not list it" % opt)
        bad = 1
    for opt in sorted(listed - found):
        print("FAIL: %s is listed but --help shows no value for it" % opt)
        bad = 1
    if not bad:
        print("ok: %d value options: %s" % (len(found), " ".join(sorted(found))))
    return bad


if __name__ == "__main__":
    sys.exit(main())
