#!/usr/bin/env python3
"""Every option the manual gives a program exists in that program's --help.

Usage: check-doc-options.py SOURCE_DIR BUILD_DIR [PAGE ...]   (default: README.md, docs/*.md)
       check-doc-options.py --self-test

check-doc-commands.py runs the fenced blocks marked `run`; the commands quoted in the prose
(`python3 bench/cpu_layer.py --threads 2 --only layer`) and in blocks marked `skip` (a GPU, root,
minutes) are not run. Here each of them is read: in every inline code span (joined across line
breaks) and every line of a fenced block, a program (hot-gen, hot-bench, hot-tune, bench/*.py,
examples/*.py, tools/*.py, tools/*.sh) and the options after it up to the end of its command (|,
;, &&, >, a comment or a parenthesis) are taken, and each option must appear in what the
program's --help prints. A program whose --help does not run here is listed and skipped.
Exit 0 when every option was found; 1 otherwise, one line per unknown option.
"""
import glob
import os
import re
import subprocess
import sys
import tempfile

PROG = re.compile(r"(?:(?<![\w/.-])(?:\./)?((?:bench|examples|tools)/[\w-]+\.(?:py|sh))"
                  r"|(?<![\w-])(hot-bench|hot-gen|hot-tune)(?![\w-]))")
END = re.compile(r"\||;|&&|>|\s#|\(|\)")
OPT = re.compile(r"(?<![\w-])(--[a-z][\w-]*)")


def commands(text):
    """(line, program, [options]) of every command quoted in a Markdown page."""
    out = []
    fence = None
    spans = []
    for n, line in enumerate(text.split("\n"), 1):
        m = re.match(r"\s*(```+|~~~+)", line)
        if m:
            fence = None if fence else m.group(1)
            continue
        if fence:
            spans.append((n, line))
    prose = re.sub(r"(?ms)^\s*(```+|~~~+).*?^\s*\1", lambda m: "\n" * m.group(0).count("\n"), text)
    for m in re.finditer(r"`([^`]+)`", prose):
        spans.append((prose.count("\n", 0, m.start()) + 1, m.group(1).replace("\n", " ")))
    for n, s in spans:
        for p in PROG.finditer(s):
            rest = END.split(s[p.end():])[0]
            out.append((n, p.group(1) or p.group(2), OPT.findall(rest)))
    return out


def help_text(src, build, prog, env, cache):
    """What `prog --help` prints, or None when it does not run here."""
    if prog not in cache:
        if prog.startswith("hot-"):
            sub = {"hot-gen": "gen", "hot-bench": "bench", "hot-tune": "tune"}[prog]
            argv = [os.path.join(build, sub, prog)]
        elif prog.endswith(".py"):
            argv = [sys.executable, os.path.join(src, prog)]
        else:
            argv = ["bash", os.path.join(src, prog)]
        try:
            r = subprocess.run(argv + ["--help"], cwd=src, env=env, capture_output=True,
                               text=True, timeout=120)
            cache[prog] = r.stdout + r.stderr if r.returncode == 0 else None
        except (OSError, subprocess.TimeoutExpired):
            cache[prog] = None
    return cache[prog]


def check(src, build, pages):
    env = dict(os.environ, PYTHONPATH=os.path.join(src, "python"),
               HOT_LIBRARY=os.path.join(build, "runtime", "libhot.so"))
    cache, bad, seen = {}, [], 0
    for page in pages:
        rel = os.path.relpath(page, src)
        with open(page, encoding="utf-8") as f:
            text = f.read()
        for n, prog, opts in commands(text):
            if not os.path.exists(os.path.join(src, prog)) and not prog.startswith("hot-"):
                continue  # a name in passing (e.g. tools/slurm/...), not a program here
            h = help_text(src, build, prog, env, cache) if opts else ""
            if h is None:
                continue
            for o in opts:
                seen += 1
                if not re.search(r"(?<![\w-])" + re.escape(o) + r"(?![\w-])", h):
                    bad.append(f"{rel}:{n}: {prog} {o}: not an option of {prog} (its --help)")
    for p in sorted(k for k, v in cache.items() if v is None):
        print(f"check-doc-options: skipped {p}: its --help does not run here")
    for b in bad:
        print(b)
    print(f"check-doc-options: {seen} options of quoted commands, {len(bad)} unknown")
    return 1 if bad else 0


def self_test():
    """A planted page: one known option passes, one unknown option fails, a pipe ends a
    command."""
    with tempfile.TemporaryDirectory() as t:
        os.makedirs(os.path.join(t, "tools"))
        with open(os.path.join(t, "tools", "x.sh"), "w") as f:
            f.write('[ "$1" = --help ] && echo "usage: x.sh [--known]"\n')
        good = os.path.join(t, "good.page")
        with open(good, "w") as f:
            f.write("Run `tools/x.sh --known | grep --other`.\n\n```sh\ntools/x.sh --known\n```\n")
        bad = os.path.join(t, "bad.page")
        with open(bad, "w") as f:
            f.write("Run `tools/x.sh\n--known --stale`.\n")
        ok = check(t, t, [good]) == 0 and check(t, t, [bad]) == 1
    print("check-doc-options self-test: %s" % ("ok" if ok else "FAIL"))
    return 0 if ok else 1


def main(argv):
    if len(argv) == 2 and argv[1] == "--self-test":
        return self_test()
    if len(argv) < 3 or argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(argv) == 2 else 2
    src, build = argv[1], argv[2]
    pages = argv[3:] or [os.path.join(src, "README.md")] + sorted(
        glob.glob(os.path.join(src, "docs", "*.md")))
    return check(src, build, pages)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
