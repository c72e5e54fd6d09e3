#!/usr/bin/env python3
"""Fails when the source files of a library call each other in a loop.

Usage: calls.py LIB.a [LIB.a ...]

Each library's members (one object per source file) are read with `nm`: a member that defines a
global symbol another member of the same library uses is called by it. The file-level call graph
of each library must have no cycle (a strongly connected set of two or more files): the pipeline
stays layered, one stage per file, each calling only the ones below it. Prints the edges of every
cycle found (file -> file: symbol) and exits 1; exits 0 with a one-line summary otherwise; 2 when
nm is missing or a library cannot be read."""
import collections
import os
import shutil
import subprocess
import sys


def members(lib):
    """{member: (defined symbols, undefined symbols)} of a static library."""
    out = subprocess.run(["nm", "-A", lib], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"calls.py: nm {lib}: {out.stderr.strip() or 'failed'}")
    m = collections.defaultdict(lambda: (set(), set()))
    for line in out.stdout.splitlines():  # LIB:MEMBER:[ADDRESS] TYPE SYMBOL
        if not line.startswith(lib + ":"):
            continue
        obj, _, rest = line[len(lib) + 1:].partition(":")
        parts = rest.split()
        if len(parts) == 3 and parts[1] in "TDRBC":
            m[obj][0].add(parts[2])
        elif len(parts) == 2 and parts[0] == "U":
            m[obj][1].add(parts[1])
    return m


def cycles(edges, nodes):
    """Strongly connected components of two or more nodes (Tarjan, iterative)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def main(libs):
    if not libs:
        sys.exit(__doc__)
    if not shutil.which("nm"):
        print("calls.py: nm not found (binutils)", file=sys.stderr)
        return 2
    bad, files = 0, 0
    for lib in libs:
        if not os.path.isfile(lib):
            print(f"calls.py: {lib}: no such library", file=sys.stderr)
            return 2
        m = members(lib)
        files += len(m)
        owner = {}
        for obj, (defs, _) in m.items():
            for s in defs:
                owner[s] = obj
        edges, why = collections.defaultdict(set), {}
        for obj, (_, uses) in m.items():
            for s in uses:
                o = owner.get(s)
                if o and o != obj:
                    edges[obj].add(o)
                    why.setdefault((obj, o), s)
        for comp in cycles(edges, m.keys()):
            bad += 1
            print(f"{os.path.basename(lib)}: call loop among {', '.join(comp)}:")
            for a in comp:
                for b in sorted(edges[a]):
                    if b in comp:
                        print(f"  {a} -> {b}: {why[(a, b)]}")
    if bad:
        print(f"calls.py: {bad} call loop(s)")
        return 1
    print(f"calls.py: {len(libs)} libraries, {files} files, no call loop")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
