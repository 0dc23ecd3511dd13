#!/usr/bin/env python3
"""Fails when the documentation falls behind the code.

  check_docs.py --source REPO_ROOT --kfuse PATH_TO_KFUSE

Checks:
  - every op (KF_OP) and attribute (KF_ATTR) of ir/Ops.def appears in docs/language.md,
    written as code (`name`);
  - every command that `kfuse --help` lists and every flag that `kfuse CMD --help` prints
    appears in docs/cli.md;
  - every environment variable read with getenv in the sources appears in docs/cli.md;
  - every markdown link in README.md and docs/*.md points to a file inside the repository
    that exists (and, for `file.md#anchor`, to a heading of that file).
Prints every problem found, one a line, and exits 1 if there is any.
"""
import argparse
import os
import re
import subprocess
import sys

SOURCE_EXTS = ('.cpp', '.h', '.cc', '.hpp', '.cuh', '.def')
SKIP_DIRS = {'.git', 'build', 'build-san'}


def read(path):
    with open(path, encoding='utf-8') as f:
        return f.read()


def code_spans(text):
    """Every `inline code` span of a markdown text (fenced blocks included as text)."""
    return set(re.findall(r'`([^`\n]+)`', text))


def mentions(text, word):
    """`word` as a whole token (not inside a longer name or flag)."""
    return re.search(r'(?<![\w-])' + re.escape(word) + r'(?![\w-])', text) is not None


def check_ops(root, problems):
    ops_def = read(os.path.join(root, 'ir', 'Ops.def'))
    lang = read(os.path.join(root, 'docs', 'language.md'))
    spans = code_spans(lang)
    span_text = '\n'.join(spans)
    ops = re.findall(r'^KF_OP\(\s*\w+\s*,\s*(\w+)\s*,', ops_def, re.M)
    attrs = re.findall(r'^KF_ATTR\(\s*\w+\s*,\s*(\w+)\s*,', ops_def, re.M)
    if not ops:
        problems.append('ir/Ops.def: no KF_OP line found (has its format changed?)')
    for op in ops:
        if op not in spans and not mentions(span_text, op):
            problems.append(f"docs/language.md: op '{op}' of ir/Ops.def is not documented "
                            f"(write it as `{op}`)")
    for a in attrs:
        if not mentions(span_text, a):
            problems.append(f"docs/language.md: attribute '{a}' of ir/Ops.def is not "
                            f"documented (write it as `{a}`)")


def run_help(kfuse, args):
    r = subprocess.run([kfuse] + args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True, timeout=60)
    if r.returncode != 0:
        raise RuntimeError(f"'{' '.join([kfuse] + args)}' exited {r.returncode}:\n{r.stdout}")
    return r.stdout


def check_cli(kfuse, root, problems):
    cli = read(os.path.join(root, 'docs', 'cli.md'))
    top = run_help(kfuse, ['--help'])
    cmds = []
    in_cmds = False
    for line in top.splitlines():
        if line.strip() == 'commands:':
            in_cmds = True
            continue
        if in_cmds:
            m = re.match(r'^  (\S+)\s+\S', line)
            if not m:
                break
            cmds.append(m.group(1))
    if not cmds:
        problems.append("'kfuse --help' lists no commands (has its format changed?)")
    for c in cmds:
        if not mentions(cli, f'kfuse {c}'):
            problems.append(f"docs/cli.md: command '{c}' (kfuse --help) is not documented")
        text = run_help(kfuse, [c, '--help'])
        flags = set()
        in_opts = False
        for line in text.splitlines():
            if line.strip() == 'options:':
                in_opts = True
                continue
            if not in_opts or not line.startswith('  -'):
                continue
            # "  -o FILE, --output=FILE   help..." : the spellings before the help text.
            spellings = re.split(r'\s{2,}', line.strip(), maxsplit=1)[0]
            for s in spellings.split(','):
                flag = s.strip().split('=')[0].split(' ')[0]
                if flag.startswith('-'):
                    flags.add(flag)
        if not flags:
            problems.append(f"'kfuse {c} --help' prints no options (has its format changed?)")
        for f in sorted(flags):
            if f in ('-h', '--help'):
                continue
            if not mentions(cli, f):
                problems.append(f"docs/cli.md: flag '{f}' of 'kfuse {c}' is not documented")


def check_env(root, problems):
    cli = read(os.path.join(root, 'docs', 'cli.md'))
    found = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames
                       if d not in SKIP_DIRS and not d.startswith('build')]
        for fn in filenames:
            if fn.endswith(SOURCE_EXTS):
                path = os.path.join(dirpath, fn)
                try:
                    text = read(path)
                except UnicodeDecodeError:
                    continue
                for var in re.findall(r'getenv\(\s*"([A-Za-z_][A-Za-z0-9_]*)"', text):
                    found.setdefault(var, os.path.relpath(path, root))
    if not found:
        problems.append('no getenv call found in the sources (is --source right?)')
    for var, where in sorted(found.items()):
        if not mentions(cli, var):
            problems.append(f"docs/cli.md: environment variable '{var}' (read in {where}) "
                            f"is not documented")


def slug(heading):
    """GitHub's anchor for a heading."""
    s = heading.strip().lower()
    s = re.sub(r'[^\w\- ]', '', s)
    return s.replace(' ', '-')


def anchors(md_text):
    out = set()
    in_fence = False
    for line in md_text.splitlines():
        if line.lstrip().startswith('```'):
            in_fence = not in_fence
            continue
        if not in_fence:
            m = re.match(r'^#{1,6}\s+(.*)$', line)
            if m:
                out.add(slug(m.group(1)))
    return out


def links(md_text):
    """Targets of [text](target) links outside fenced code blocks and code spans."""
    out = []
    in_fence = False
    for n, line in enumerate(md_text.splitlines(), 1):
        if line.lstrip().startswith('```'):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        line = re.sub(r'`[^`]*`', '', line)
        for m in re.finditer(r'\]\(([^)\s]+)(?:\s+"[^"]*")?\)', line):
            out.append((n, m.group(1)))
    return out


def check_links(root, problems):
    root_real = os.path.realpath(root)
    files = [os.path.join(root, 'README.md')]
    docs = os.path.join(root, 'docs')
    if os.path.isdir(docs):
        files += sorted(os.path.join(docs, f) for f in os.listdir(docs) if f.endswith('.md'))
    for md in files:
        rel_md = os.path.relpath(md, root)
        text = read(md)
        for line, target in links(text):
            where = f'{rel_md}:{line}'
            if re.match(r'^[a-zA-Z][a-zA-Z0-9+.-]*:', target):
                problems.append(f"{where}: link '{target}' points outside the repository")
                continue
            path, _, anchor = target.partition('#')
            dest = md if path == '' else os.path.join(os.path.dirname(md), path)
            if os.path.isabs(path):
                problems.append(f"{where}: link '{target}' is an absolute path")
                continue
            real = os.path.realpath(dest)
            if real != root_real and not real.startswith(root_real + os.sep):
                problems.append(f"{where}: link '{target}' points outside the repository")
                continue
            if not os.path.exists(real):
                problems.append(f"{where}: link '{target}': no such file")
                continue
            if anchor and real.endswith('.md') and anchor not in anchors(read(real)):
                problems.append(f"{where}: link '{target}': no heading '#{anchor}' in "
                                f"{os.path.relpath(real, root_real)}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--source', required=True, help='the repository root')
    ap.add_argument('--kfuse', required=True, help='the kfuse binary')
    a = ap.parse_args()
    problems = []
    check_ops(a.source, problems)
    check_cli(a.kfuse, a.source, problems)
    check_env(a.source, problems)
    check_links(a.source, problems)
    for p in problems:
        print(f'check_docs: {p}')
    if problems:
        print(f'check_docs: {len(problems)} problem(s); update docs/ to match the code')
        return 1
    print('check_docs: docs cover every op, attribute, command, flag and environment '
          'variable; every link resolves')
    return 0


if __name__ == '__main__':
    sys.exit(main())
