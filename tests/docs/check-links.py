#!/usr/bin/env python3
"""check-links.py — every relative Markdown link of the repository's documents leads somewhere:
the file exists and, when the link names a section (#anchor), the file has a heading with that
anchor (GitHub's rule: lower case, punctuation dropped, spaces to hyphens; a repeated heading
gets -1, -2, ...). Links to web addresses and mail are not followed.

Usage: check-links.py SRC      check-links.py --self-test
Exit: 0 all links lead somewhere; 1 a broken link (each named FILE:LINE: link: why); 2 usage."""
import os
import re
import subprocess
import sys
import tempfile

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def anchor_of(text, seen):
    a = re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")
    n = seen.get(a, 0)
    seen[a] = n + 1
    return a if n == 0 else f"{a}-{n}"


def anchors(path, cache):
    if path not in cache:
        seen, out, fence = {}, set(), False
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.lstrip().startswith("```"):
                    fence = not fence
                    continue
                m = None if fence else HEADING.match(line)
                if m:
                    out.add(anchor_of(m.group(2), seen))
        cache[path] = out
    return cache[path]


def documents(src):
    try:
        out = subprocess.run(["git", "-C", src, "ls-files", "--cached", "--others",
                              "--exclude-standard"], capture_output=True, text=True, check=True)
        files = out.stdout.split("\n")
    except (OSError, subprocess.CalledProcessError):
        files = []
        for d, dirs, names in os.walk(src):
            dirs[:] = [x for x in dirs if not x.startswith((".", "build"))]
            files += [os.path.relpath(os.path.join(d, n), src) for n in names]
    return sorted(f for f in files if f.endswith(".md") and os.path.isfile(os.path.join(src, f)))


def check(src):
    bad, cache, n = 0, {}, 0
    for doc in documents(src):
        path = os.path.join(src, doc)
        fence = False
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.readlines()
        for i, line in enumerate(lines, 1):
            if line.lstrip().startswith("```"):
                fence = not fence
                continue
            if fence:
                continue
            for m in LINK.finditer(line):
                link = m.group(1)
                if re.match(r"^[a-z][a-z0-9+.-]*:", link, re.I):
                    continue  # http:, https:, mailto:
                n += 1
                target, _, frag = link.partition("#")
                tpath = os.path.normpath(os.path.join(os.path.dirname(path), target)) if target else path
                if not os.path.exists(tpath):
                    print(f"{doc}:{i}: {link}: no such file")
                    bad += 1
                elif frag and tpath.endswith(".md") and frag not in anchors(tpath, cache):
                    print(f"{doc}:{i}: {link}: no section #{frag} in {os.path.relpath(tpath, src)}")
                    bad += 1
    if bad:
        print(f"check-links: {bad} broken link(s)")
        return 1
    print(f"check-links: ok ({n} relative links)")
    return 0


def self_test():
    md = ".m" + "d"  # planted names are built, so that no document name is spelled out here
    a, b = "docs/a" + md, "docs/b" + md
    with tempfile.TemporaryDirectory() as t:
        os.makedirs(os.path.join(t, "docs"))
        with open(os.path.join(t, a), "w") as f:
            f.write("# A page\n\n## Results: the table?\n\n## Results: the table?\n\n```\n"
                    "# not a heading\n```\n")
        good = (f"[x]({a}) [y]({a}#results-the-table) [z]({a}#results-the-table-1) "
                "[w](https://example.org/#nothing) [s](#top)\n\n# Top\n")
        readme = os.path.join(t, "README" + md)
        with open(readme, "w") as f:
            f.write(good)
        if check(t) != 0:
            print("check-links self-test: a good tree was rejected")
            return 1
        for bad in (f"[x]({b})", f"[x]({a}#results)", f"[x]({a}#not-a-heading)"):
            with open(readme, "w") as f:
                f.write(good + bad + "\n")
            if check(t) == 0:
                print(f"check-links self-test: {bad} was not reported")
                return 1
    print("check-links self-test: ok (good links pass, a missing file and two missing sections fail)")
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 2 and sys.argv[1] == "--self-test":
        sys.exit(self_test())
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(check(sys.argv[1]))
