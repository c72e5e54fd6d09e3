#!/usr/bin/env python3
"""Every command the manual shows is run, and every output it quotes is compared.

Usage: check-doc-commands.py SOURCE_DIR BUILD_DIR [PAGE ...]   (default: README.md and docs/*.md)
       check-doc-commands.py --self-test

Reads README.md and docs/*.md (or the named files) and classifies every fenced code block by the
HTML comment on the line right above its opening fence (invisible when the page is rendered):

  <!-- doc-test: run [requires=WHAT,...] [timeout=S] [rc=N] -->
      the block is run: sh/bash/console/no language with bash -e -o pipefail, python with python3;
  <!-- doc-test: session [requires=...] -->
      lines starting with "$ " are commands, each run in turn; the lines after one are its output;
  <!-- doc-test: output [contains] [vary=REGEX] -->
      the expected output (stdout and stderr together) of the nearest run block above it in the
      same file; without `contains` the whole output, with it these lines in this order with
      anything between them;
  <!-- doc-test: skip REASON -->
      a command that is not run here (a GPU, root, the network or minutes); listed with its reason;
  <!-- doc-test: text [WHAT] -->
      neither a command nor an output: a diagram, a synopsis, a format sketch, a code fragment.

Blocks whose language is empty, sh, bash, shell, console, text or python must carry one of these
(an untagged one fails the check); c, cmake and lua listings may. `requires` names what a block
needs; where it is missing the block is skipped and listed: `nvrtc` (libnvrtc loads), `no-gpu`
(libcuda.so.1 does not load), `torch` (python3 imports torch).

Each block runs in a fresh copy of the source tree made of symlinks (its top-level entries),
with `build` linking to BUILD_DIR, HOME a fresh empty folder, no HOT_* variable set,
PYTHONPATH=python, HOT_LIBRARY=build/runtime/libhot.so and LC_ALL=C.

Comparison, after normalising both sides the same way, line by line:
  1. HOME's path is written `~`, the tree's path `.`, BUILD_DIR's `build`;
  2. every match of the output block's `vary=REGEX` becomes <V>;
  3. a number with a time unit (ns, us, ms, s, min) becomes <TIME>; a date 2026-12-02 becomes
     <DATE>; a clock time 17:38 or 17:38:05 becomes <CLOCK>;
  4. runs of blanks become one space; leading and trailing blanks and blank lines are dropped.
In the expected text a line `...` stands for any number of lines, and a line ending in ` ...`
for any line that begins with what precedes it (abridged quotes).

Besides, the README's test command is checked to be the line .ci/run runs, and .ci/run to fail
when any command of that && list fails (set -e alone stops only at its last command).
Exit 0 when every run block succeeded and every quote matched; 1 otherwise.
"""
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

MARK = re.compile(r'^\s*<!--\s*doc-test:\s*(\w[\w-]*)\s*(.*?)\s*-->\s*$')
FENCE = re.compile(r'^(\s*)(```+|~~~+)\s*([^`\s]*)')
MUST_TAG = {'', 'sh', 'bash', 'shell', 'console', 'text', 'python'}
KINDS = {'run', 'session', 'output', 'skip', 'text'}
DEFAULT_TIMEOUT = 60


class Block:
    def __init__(self, path, line, lang, body, kind, args):
        self.path, self.line, self.lang, self.body = path, line, lang, body
        self.kind, self.args = kind, args
        self.opts = {}
        self.flags = set()
        if kind in ('run', 'session', 'output'):
            for tok in shlex.split(args):
                if '=' in tok:
                    k, v = tok.split('=', 1)
                    self.opts[k] = v
                else:
                    self.flags.add(tok)

    def where(self):
        return f'{self.path}:{self.line}'


def parse(path, rel):
    """The fenced blocks of one Markdown file, with their markers; a list of problems."""
    lines = open(path, encoding='utf-8').read().split('\n')
    blocks, problems = [], []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, lang = m.group(2), m.group(3).lower()
        j = i + 1
        while j < len(lines) and not lines[j].strip().startswith(fence[0] * len(fence)):
            j += 1
        body = lines[i + 1:j]
        mk = MARK.match(lines[i - 1]) if i > 0 else None
        if mk:
            kind, args = mk.group(1), mk.group(2)
            if kind not in KINDS:
                problems.append(f'{rel}:{i + 1}: unknown doc-test marker "{kind}"')
            elif kind == 'skip' and not args:
                problems.append(f'{rel}:{i + 1}: "doc-test: skip" needs a reason')
            else:
                try:
                    blocks.append(Block(rel, i + 1, lang, body, kind, args))
                except ValueError as e:
                    problems.append(f'{rel}:{i + 1}: bad marker arguments: {e}')
        elif lang in MUST_TAG:
            problems.append(f'{rel}:{i + 1}: fenced block ("{lang or "no language"}") without a '
                            '"<!-- doc-test: run|session|output|skip|text -->" line above it')
        i = j + 1
    return blocks, problems


def probe(what, env):
    """Whether a requirement holds here: (True, '') or (False, why)."""
    if what == 'torch':
        r = subprocess.run([sys.executable, '-c', 'import torch'], env=env,
                           capture_output=True)
        return (r.returncode == 0, 'python3 cannot import torch')
    import ctypes
    if what == 'no-gpu':
        try:
            ctypes.CDLL('libcuda.so.1')
            return (False, 'a CUDA driver is present (the quote shows the CPU fallback)')
        except OSError:
            return (True, '')
    if what == 'nvrtc':
        homes = [env.get('CUDA_HOME', ''), env.get('CUDA_PATH', ''), '/usr/local/cuda']
        names = ['libnvrtc.so'] + [f'libnvrtc.so.{v}' for v in (13, 12, 11)]
        for h in homes:
            if h:
                names += [os.path.join(h, d, n) for d in ('lib64', 'lib')
                          for n in list(names[:4])]
        for n in names:
            try:
                ctypes.CDLL(n)
                return (True, '')
            except OSError:
                pass
        return (False, 'no NVRTC library loads')
    return (False, f'unknown requirement "{what}"')


TIME = re.compile(r'(?<![\w.])\d+(?:\.\d+)?\s?(?:ns|us|µs|ms|s|min)\b')
DATE = re.compile(r'\b\d{4}-\d\d-\d\d\b')
CLOCK = re.compile(r'\b\d\d:\d\d(?::\d\d)?\b')


def normalise(text, ctx, vary):
    out = []
    for line in text.split('\n'):
        for path, name in ctx.get('paths', []):
            line = line.replace(path, name)
        if vary:
            line = re.sub(vary, '<V>', line)
        line = TIME.sub('<TIME>', line)
        line = DATE.sub('<DATE>', line)
        line = CLOCK.sub('<CLOCK>', line)
        line = ' '.join(line.split())
        out.append(line)
    while out and not out[-1]:
        out.pop()
    while out and not out[0]:
        out.pop(0)
    return [l for l in out if l]


def pattern(expected, contains):
    """A regex over the normalised actual text ('\n'-joined lines, each ending in '\n')."""
    parts = []
    for line in expected:
        if line == '...':
            parts.append(r'(?:[^\n]*\n)*?')
        elif line.endswith(' ...'):
            parts.append(re.escape(line[:-4]) + r'[^\n]*\n')
        else:
            parts.append(re.escape(line) + r'\n')
    if contains:
        return re.compile(r'(?:[^\n]*\n)*?'.join(parts))
    return re.compile(r'\A' + ''.join(parts) + r'\Z')


def matches(expected, actual, contains):
    text = ''.join(l + '\n' for l in actual)
    pat = pattern(expected, contains)
    return bool(pat.search(text) if contains else pat.match(text))


def make_tree(src, build, tmp):
    tree = os.path.join(tmp, 'tree')
    home = os.path.join(tmp, 'home')
    os.makedirs(tree)
    os.makedirs(home)
    for name in os.listdir(src):
        if name in ('build', '.git'):
            continue
        os.symlink(os.path.join(src, name), os.path.join(tree, name))
    os.symlink(build, os.path.join(tree, 'build'))
    env = {k: v for k, v in os.environ.items() if not k.startswith('HOT_')}
    env.update(HOME=home, LC_ALL='C', PYTHONPATH=os.path.join(tree, 'python'),
               HOT_LIBRARY=os.path.join(build, 'runtime', 'libhot.so'), PWD=tree)
    return tree, home, env


def run_one(cmd, lang, src, build, timeout):
    """Runs one command (or script) in a fresh tree; returns (rc, output, paths)."""
    tmp = tempfile.mkdtemp(prefix='hot-doc-')
    try:
        tree, home, env = make_tree(src, build, tmp)
        argv = ([sys.executable, '-c', cmd] if lang == 'python'
                else ['bash', '-e', '-o', 'pipefail', '-c', cmd])
        try:
            r = subprocess.run(argv, cwd=tree, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, timeout=timeout)
            out, rc = r.stdout.decode('utf-8', 'replace'), r.returncode
        except subprocess.TimeoutExpired:
            out, rc = f'(timed out after {timeout} s)', 124
        paths = [(home, '~'), (tree, '.'), (build, 'build'), (tmp, '<TMP>')]
        return rc, out, paths
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def session_steps(block):
    """(command, expected lines) per "$ " line of a session block."""
    steps = []
    for line in block.body:
        if line.startswith('$ '):
            steps.append([line[2:], []])
        elif steps:
            steps[-1][1].append(line)
    return steps


def check_output(where, out, expected_lines, contains, vary, ctx):
    want = normalise('\n'.join(expected_lines), {}, vary)
    have = normalise(out, ctx, vary)
    if matches(want, have, contains):
        return None
    msg = [f'FAIL {where}: the quoted output no longer matches'
           + (' (contains)' if contains else '')]
    msg += ['  quoted (normalised):'] + ['    ' + l for l in want]
    msg += ['  printed now (normalised):'] + ['    ' + l for l in have[:80]]
    return '\n'.join(msg)


def check_ci_line(src):
    """README's test command is exactly the line .ci/run runs."""
    ci = os.path.join(src, '.ci', 'run')
    readme = os.path.join(src, 'README.md')
    if not (os.path.exists(ci) and os.path.exists(readme)):
        return None
    # the README's command (ctest on build/); .ci/run may run more after it (the fuzz build)
    ci_cmd = [l.strip() for l in open(ci) if 'ctest --test-dir build ' in l and '&&' in l]
    doc_cmd = [l.strip() for l in open(readme) if 'ctest --test-dir build --output-on-failure' in l
               and '&&' in l]
    if len(ci_cmd) != 1 or len(doc_cmd) != 1 or ci_cmd[0] != doc_cmd[0]:
        return ('FAIL README.md: its test command is not the line .ci/run runs:\n'
                f'  README: {doc_cmd}\n  .ci/run: {ci_cmd}')
    # set -e does not stop at a failure before the last command of an && list: .ci/run must
    # read the list's status on the next command and exit with it
    lines = [l.strip() for l in open(ci)]
    after = [l for l in lines[lines.index(ci_cmd[0]) + 1:] if l and not l.startswith('#')]
    if len(after) < 3 or after[0] != 'readme_status=$?' or \
            not any(l == 'exit "$readme_status"' for l in after[1:4]):
        return ('FAIL .ci/run: the README\'s test command is an && list, and set -e does not stop '
                'at a failure before its last command: the next command must be '
                '`readme_status=$?`, then exit "$readme_status" when it is not 0')
    return None


def check(src, build, files):
    failures, skipped, counts = [], [], {'run': 0, 'compared': 0}
    blocks = []
    for rel in files:
        b, p = parse(os.path.join(src, rel), rel)
        blocks += b
        failures += [f'FAIL {x}' for x in p]
    env0 = make_env_for_probe()
    probes = {}
    last_run = {}
    for b in blocks:
        if b.kind == 'skip':
            skipped.append(f'{b.where()}: {b.args}')
            continue
        if b.kind == 'text':
            continue
        if b.kind == 'output':
            prev = last_run.pop(b.path, None)
            if prev is None:
                failures.append(f'FAIL {b.where()}: an output block with no run block above it')
            elif prev != 'skipped':
                rc, out, paths = prev
                f = check_output(b.where(), out, b.body, 'contains' in b.flags,
                                 b.opts.get('vary'), {'paths': paths})
                counts['compared'] += 1
                if f:
                    failures.append(f)
            continue
        reqs = [r for r in b.opts.get('requires', '').split(',') if r]
        why = []
        for r in reqs:
            if r not in probes:
                probes[r] = probe(r, env0)
            if not probes[r][0]:
                why.append(probes[r][1])
        if why:
            skipped.append(f'{b.where()}: needs {", ".join(reqs)}: {"; ".join(why)}')
            last_run[b.path] = 'skipped'
            continue
        timeout = int(b.opts.get('timeout', DEFAULT_TIMEOUT))
        want_rc = int(b.opts.get('rc', '0'))
        if b.kind == 'run':
            print(f'RUN  {b.where()}', flush=True)
            rc, out, paths = run_one('\n'.join(b.body), b.lang, src, build, timeout)
            counts['run'] += 1
            if rc != want_rc:
                failures.append(f'FAIL {b.where()}: exit status {rc}, expected {want_rc}; '
                                'output:\n' + '\n'.join('    ' + l for l in out.split('\n')[-30:]))
            last_run[b.path] = (rc, out, paths)
        else:  # session
            for cmd, exp in session_steps(b):
                print(f'RUN  {b.where()}: $ {cmd}', flush=True)
                rc, out, paths = run_one(cmd, 'sh', src, build, timeout)
                counts['run'] += 1
                if rc != want_rc:
                    failures.append(f'FAIL {b.where()}: `{cmd}` exit status {rc}; output:\n'
                                    + '\n'.join('    ' + l for l in out.split('\n')[-30:]))
                    continue
                f = check_output(f'{b.where()} ($ {cmd})', out, exp, False,
                                 b.opts.get('vary'), {'paths': paths})
                counts['compared'] += 1
                if f:
                    failures.append(f)
    f = check_ci_line(src)
    if f:
        failures.append(f)
    for s in skipped:
        print(f'SKIP {s}')
    print(f'doc commands: {counts["run"]} run, {counts["compared"]} quoted outputs compared, '
          f'{len(skipped)} skipped (listed above), {len(failures)} failure(s)')
    for f in failures:
        print(f, file=sys.stderr)
    return 1 if failures else 0


def make_env_for_probe():
    return {k: v for k, v in os.environ.items() if not k.startswith('HOT_')}


def doc_files(src):
    files = ['README.md']
    d = os.path.join(src, 'docs')
    files += sorted('docs/' + f for f in os.listdir(d) if f.endswith('.md'))
    return files


SELF_TEST = {
    'ok.page': ('<!-- doc-test: run -->\n```sh\necho "took 12.5 ms on 2026-01-02"; echo two\n```\n'
              '<!-- doc-test: output -->\n```\ntook 3 ms on 2030-10-10\ntwo\n```\n'
              '<!-- doc-test: run -->\n```sh\nseq 1 9\n```\n'
              '<!-- doc-test: output contains -->\n```\n2 ...\n...\n7\n```\n'
              '<!-- doc-test: skip needs a GPU -->\n```sh\nfalse\n```\n'
              '<!-- doc-test: session -->\n```\n$ echo a   b\na b\n```\n'
              '```c\nint x;\n```\n', 0),
    'stale.page': ('<!-- doc-test: run -->\n```sh\necho 9 programs\n```\n'
                 '<!-- doc-test: output -->\n```\n8 programs\n```\n', 1),
    'untagged.page': ('```sh\necho hi\n```\n', 1),
    'noreason.page': ('<!-- doc-test: skip -->\n```sh\necho hi\n```\n', 1),
    'failing.page': ('<!-- doc-test: run -->\n```sh\nfalse\necho not reached\n```\n', 1),
    'orphan.page': ('<!-- doc-test: output -->\n```\nx\n```\n', 1),
    'session.page': ('<!-- doc-test: session -->\n```\n$ echo 1\n2\n```\n', 1),
}


def self_test():
    tmp = tempfile.mkdtemp(prefix='hot-doc-self-')
    bad = 0
    try:
        src, build = os.path.join(tmp, 'src'), os.path.join(tmp, 'build')
        os.makedirs(src)
        os.makedirs(build)
        for name, (text, want) in SELF_TEST.items():
            with open(os.path.join(src, name), 'w') as f:
                f.write(text)
            got = check(src, build, [name])
            print(f'self-test {name}: exit {got}, expected {want}')
            if got != want:
                bad += 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print('self-test: ' + ('FAILED' if bad else 'ok'))
    return 1 if bad else 0


def main(argv):
    if argv[1:] == ['--self-test']:
        return self_test()
    if len(argv) < 3:
        print(__doc__.split('\n\n')[1], file=sys.stderr)
        return 2
    src, build = os.path.abspath(argv[1]), os.path.abspath(argv[2])
    if not os.path.isdir(build):
        print(f'check-doc-commands: {build}: not a build directory', file=sys.stderr)
        return 2
    files = argv[3:] or doc_files(src)
    return check(src, build, files)


if __name__ == '__main__':
    sys.exit(main(sys.argv))
