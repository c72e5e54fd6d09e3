#!/usr/bin/env python3
"""expect_output.py — run a test command and judge it by its exit status AND its output.

CTest's PASS_REGULAR_EXPRESSION makes a test pass on the expression alone and ignores the
command's exit status: a command that prints its expected line and then fails (a later level,
a traceback, sys.exit) still passes. Tests that need to see a line in the output run through this
wrapper instead:

    expect_output.py [--status 0|nonzero] --expect REGEX [--expect REGEX ...] [--forbid REGEX ...]
                     -- COMMAND [ARG ...]

runs COMMAND, echoes its output (stdout and stderr, merged), and exits 0 only when its exit
status is the one asked for (default 0; `nonzero`: any failure, for a test whose command must
reject its input), every --expect expression is found in the output (Python `re.search` with
`.` matching newlines too, as in CTest's expressions) and no --forbid expression is. Otherwise
it prints one line saying which condition failed and exits 1. A command that cannot start exits
1 with the reason.

    expect_output.py --scan SOURCE_DIR

lists every CMakeLists.txt and *.cmake file of the source tree (build trees and the .git folder
left out) and fails, naming file and line, on any use of PASS_REGULAR_EXPRESSION: every test
that matches its output goes through this wrapper, so none can pass on a line while its command
fails.

    expect_output.py --selftest

checks the verdicts on small commands with known answers (a pass line then exit 1 fails; a pass
line and exit 0 passes; a missing line fails; a forbidden line fails; --status nonzero with exit
0 fails) and the scan on a sample tree.
"""
import os
import re
import subprocess
import sys
import tempfile

SCANNED = ("CMakeLists.txt",)
SCANNED_EXT = (".cmake",)
SKIP_DIRS = {".git", "build", "_deps"}
BANNED = "PASS_REGULAR_EXPRESSION"
FLAGS = re.M | re.S  # '.' crosses lines, as in CTest's regular expressions


def usage(msg):
    print("expect_output.py: %s (see --help)" % msg)
    return 2


def parse(argv):
    """(status, expects, forbids, command) from argv, or a message string on bad usage."""
    if "--" not in argv:
        return "no '--' before the command"
    i = argv.index("--")
    opts, cmd = argv[:i], argv[i + 1:]
    if not cmd:
        return "no command after '--'"
    status, expects, forbids = "0", [], []
    j = 0
    while j < len(opts):
        o = opts[j]
        if o not in ("--status", "--expect", "--forbid") or j + 1 >= len(opts):
            return "unknown option or missing value: %s" % o
        v = opts[j + 1]
        if o == "--status":
            if v not in ("0", "nonzero"):
                return "--status must be 0 or nonzero (got %s)" % v
            status = v
        else:
            try:
                re.compile(v, FLAGS)
            except re.error as e:
                return "%s %r: not a regular expression (%s)" % (o, v, e)
            (expects if o == "--expect" else forbids).append(v)
        j += 2
    if not expects:
        return "no --expect expression"
    return status, expects, forbids, cmd


def verdict(status, expects, forbids, rc, out):
    """None when the run passes, else the one-line reason."""
    if status == "0" and rc != 0:
        return "the command exited %d (0 expected)" % rc
    if status == "nonzero" and rc == 0:
        return "the command exited 0 (a failure expected)"
    for x in expects:
        if not re.search(x, out, FLAGS):
            return "no line matches --expect %r" % x
    for x in forbids:
        m = re.search(x, out, FLAGS)
        if m:
            return "a forbidden line matches --forbid %r: %r" % (x, m.group(0))
    return None


def run(argv):
    p = parse(argv)
    if isinstance(p, str):
        return usage(p)
    status, expects, forbids, cmd = p
    try:
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    except OSError as e:
        print("expect_output.py: cannot run %s: %s" % (cmd[0], e))
        return 1
    out = r.stdout.decode("utf-8", errors="replace")
    sys.stdout.write(out)
    if out and not out.endswith("\n"):
        sys.stdout.write("\n")
    why = verdict(status, expects, forbids, r.returncode, out)
    if why:
        print("expect_output.py: FAIL: %s" % why)
        return 1
    print("expect_output.py: ok (exit %d, %d expected line(s) found)"
          % (r.returncode, len(expects)))
    return 0


def scan(root):
    """[(file, line)] of every PASS_REGULAR_EXPRESSION in the tree's CMake files."""
    found = []
    for base, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("build"))
        for f in sorted(files):
            if f in SCANNED or f.endswith(SCANNED_EXT):
                p = os.path.join(base, f)
                with open(p, encoding="utf-8", errors="replace") as fh:
                    for n, line in enumerate(fh, 1):
                        if BANNED in line.split("#", 1)[0]:
                            found.append((os.path.relpath(p, root), n))
    return found


def selftest():
    py = sys.executable
    cases = [  # (argv before the command, command's Python source, expected verdict: True passes)
        (["--expect", "ok line"], "print('ok line')", True),
        (["--expect", "ok line"], "print('ok line'); raise SystemExit(1)", False),
        (["--expect", "ok line"], "print('other')", False),
        (["--expect", "ok", "--forbid", "BITS DIFFER"], "print('ok'); print('BITS DIFFER')", False),
        (["--status", "nonzero", "--expect", "loop"], "print('loop'); raise SystemExit(3)", True),
        (["--status", "nonzero", "--expect", "loop"], "print('loop')", False),
        (["--expect", "a", "--expect", "b"], "print('a')", False),
        (["--expect", "head.*tail [0-9]+"], "print('head'); print('tail 7')", True),
    ]
    bad = 0
    for opts, src, want in cases:
        p = parse(opts + ["--", py, "-c", src])
        r = subprocess.run(p[3], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        got = verdict(p[0], p[1], p[2], r.returncode, r.stdout.decode()) is None
        if got != want:
            print("selftest: %s on %r: %s, expected %s" % (opts, src, got, want))
            bad += 1
    for argv in (["--expect", "x"], ["--", "true"], ["--status", "1", "--expect", "x", "--", "t"],
                 ["--expect", "(", "--", "t"]):
        if not isinstance(parse(argv), str):
            print("selftest: bad usage %r accepted" % argv)
            bad += 1
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(os.path.join(d, "t"))
        os.makedirs(os.path.join(d, "build", "x"))
        with open(os.path.join(d, "t", "CMakeLists.txt"), "w") as f:
            f.write("# " + BANNED + " in a comment is fine\nset_tests_properties(a PROPERTIES\n  " +
                    BANNED + " \"x\")\n")
        with open(os.path.join(d, "build", "x", "CMakeLists.txt"), "w") as f:
            f.write(BANNED + "\n")
        if scan(d) != [(os.path.join("t", "CMakeLists.txt"), 3)]:
            print("selftest: scan found %r" % scan(d))
            bad += 1
    print("selftest: %d case(s) wrong" % bad if bad else "selftest: every verdict as expected")
    return 1 if bad else 0


def main(argv):
    if argv[:1] in (["-h"], ["--help"]):
        print(__doc__)
        return 0
    if argv[:1] == ["--selftest"]:
        return selftest()
    if argv[:1] == ["--scan"]:
        if len(argv) != 2 or not os.path.isdir(argv[1]):
            return usage("--scan takes the source folder")
        found = scan(argv[1])
        for f, n in found:
            print("%s:%d: %s ignores the command's exit status: run the test through "
                  "tests/expect_output.py --expect" % (f, n, BANNED))
        if not found:
            print("scan: no test of the tree passes on its output alone")
        return 1 if found else 0
    return run(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
