# SPDX-License-Identifier: MIT
"""bench/run --audit: fhashctl audit against AIDE (Debian's aide), on the same trees, in one run.

What each detects: a small tree gets one change of each kind (content; content of the same size with
its mtime put back; mode; owner; an extended attribute; mtime alone; the file replaced by a copy, a
new inode, as dpkg does; renamed; deleted; a new file), and each tool's report is read for each
file: fhashctl audit with every attribute (--attributes), aide with p+i+u+g+s+m+c+acl+xattrs+sha256.

How long each takes: making the baseline (aide --init, fhashctl audit --create --attributes) and
checking a tree against it (aide --check, fhashctl audit), on /usr (or --audit-tree), hot (second
run) and cold (the tree's page cache dropped file by file first: the inodes stay cached for both),
aide with --workers=<cores>, fhashctl through fhashd on a private bus; best of --repeat runs,
alternating. Needs root (the page cache, a chown) and aide.
"""

import os
import re
import shutil
import subprocess
import tempfile
import time

from .background import Daemon, ncpu

AIDE_RULE = 'p+i+u+g+s+m+c+acl+xattrs+sha256'

# (file, what is done to it, the kind an audit should call it)
CHANGES = [
    ('content', 'content changed (appended)', 'changed'),
    ('same-size', 'content changed, same size, mtime put back', 'changed'),
    ('mode', 'mode 0644 -> 0600', 'changed'),
    ('owner', 'owner root -> nobody', 'changed'),
    ('xattr', 'an extended attribute added', 'changed'),
    ('touched', 'mtime alone (touch -d)', 'changed'),
    ('replaced', 'replaced by a copy (new inode, same content)', 'changed'),
    ('renamed', 'renamed (moved)', 'moved'),
    ('deleted', 'deleted', 'missing'),
    ('added', 'a new file', 'new'),
]


def aide_conf(d, tree):
    conf = os.path.join(d, 'aide.conf')
    with open(conf, 'w') as f:
        f.write(f'database_in=file:{d}/aide.db\ndatabase_out=file:{d}/aide.db.new\ngzip_dbout=no\n'
                f'report_url=stdout\nlog_level=warning\nFHASH = {AIDE_RULE}\n{tree} FHASH\n')
    return conf


def aide(conf, what, workers):
    t0 = time.monotonic()
    p = subprocess.run(['aide', f'--{what}', '-c', conf, f'--workers={workers}'], capture_output=True, text=True)
    wall = time.monotonic() - t0
    if what == 'init':
        d = os.path.dirname(conf)
        os.replace(os.path.join(d, 'aide.db.new'), os.path.join(d, 'aide.db'))
    # --check: 0 nothing changed, else a bitmask of added (1), removed (2), changed (4); 14+ errors.
    if p.returncode >= 14:
        raise RuntimeError(f'aide --{what}: {p.returncode} {p.stderr.strip()[-300:]}')
    return wall, p.stdout


def aide_findings(out, tree):
    """{relative name: 'new'|'missing'|'changed (...)'} from aide's plain report."""
    found, section = {}, None
    for line in out.splitlines():
        m = re.match(r'^(Added|Removed|Changed) entries:', line)
        if m:
            section = {'Added': 'new', 'Removed': 'missing', 'Changed': 'changed'}[m.group(1)]
            continue
        if line.startswith('Detailed information'):
            section = None
        m = re.match(r'^(\S)\s?(.*?)\s*: (.*)$', line)
        if section and m and m.group(3).startswith(tree + '/') and m.group(1) == 'f':
            name = m.group(3)[len(tree) + 1:]
            found[name] = section + (f' ({m.group(2).strip()})' if section == 'changed' else '')
    return found


def make_tree(t):
    shutil.rmtree(t, ignore_errors=True)
    os.makedirs(os.path.join(t, 'sub'))
    for name, _, _ in CHANGES:
        if name != 'added':
            with open(os.path.join(t, name), 'wb') as f:
                f.write(name.encode() * 100)
    with open(os.path.join(t, 'sub', 'untouched'), 'wb') as f:
        f.write(b'u' * 1000)
    old = time.time() - 86400
    for root, _, files in os.walk(t):
        for n in files:
            os.utime(os.path.join(root, n), (old, old))


def change(t):
    p = lambda n: os.path.join(t, n)  # noqa: E731
    with open(p('content'), 'ab') as f:
        f.write(b'x')
    st = os.stat(p('same-size'))
    with open(p('same-size'), 'r+b') as f:
        f.write(b'X')
    os.utime(p('same-size'), ns=(st.st_atime_ns, st.st_mtime_ns))
    os.chmod(p('mode'), 0o600)
    os.chown(p('owner'), 65534, 65534)
    os.setxattr(p('xattr'), 'user.fhash-bench', b'1')
    os.utime(p('touched'), (time.time() - 3600, time.time() - 3600))
    shutil.copy2(p('replaced'), p('replaced.tmp'))
    os.replace(p('replaced.tmp'), p('replaced'))
    os.rename(p('renamed'), p('sub/renamed-to'))
    os.unlink(p('deleted'))
    with open(p('added'), 'wb') as f:
        f.write(b'new')


def detection(a, address, log):
    tmp = tempfile.mkdtemp(prefix='fhash-bench-audit-')
    try:
        t = os.path.join(tmp, 'tree')
        make_tree(t)
        conf = aide_conf(tmp, t)
        aide(conf, 'init', 1)
        base = os.path.join(tmp, 'fhash.sums')
        ctl = [a.fhashctl, '--address', address, '--daemon']
        subprocess.run(ctl + ['audit', '--create', '--attributes', base, t], check=True, capture_output=True)
        change(t)
        _, out = aide(conf, 'check', 1)
        theirs = aide_findings(out, t)
        p = subprocess.run(ctl + ['audit', base, t], capture_output=True, text=True)
        ours = {}
        for line in p.stdout.splitlines():
            name, _, what = line.partition(': ')
            if not what.startswith('ok'):
                ours[name] = what
        rows = []
        for name, what, kind in CHANGES:
            n = 'sub/renamed-to' if name == 'renamed' else name
            f = ours.get(n, '-')
            ad = theirs.get(n, '-')
            if name == 'renamed':
                ad = f'{ad}; old name: {theirs.get("renamed", "-")}'
            rows.append({'change': what, 'fhashctl': f, 'aide': ad})
            log(f'  {what}: fhashctl {f!r}, aide {ad!r}')
        rows.append({'change': '(untouched file)', 'fhashctl': ours.get('sub/untouched', 'ok'),
                     'aide': theirs.get('sub/untouched', 'ok')})
        return rows
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def drop(tree):
    for root, _, files in os.walk(tree):
        for n in files:
            p = os.path.join(root, n)
            try:
                fd = os.open(p, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            except OSError:
                continue
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            except OSError:
                pass
            os.close(fd)


def timing(a, address, tree, repeat, log):
    tmp = tempfile.mkdtemp(prefix='fhash-bench-audit-')
    workers = ncpu()
    try:
        conf = aide_conf(tmp, tree)
        base = os.path.join(tmp, 'fhash.sums')
        ctl = [a.fhashctl, '--address', address, '--daemon']
        nfiles = sum(len(f) for _, _, f in os.walk(tree))
        runs = {}

        def fh(what):
            if what == 'init' and os.path.exists(base):
                os.unlink(base)
            argv = ctl + ['audit', '--quiet'] + (['--create', '--attributes'] if what == 'init' else []) + [base, tree]
            t0 = time.monotonic()
            p = subprocess.run(argv, capture_output=True, text=True)
            if p.returncode not in (0, 1):
                raise RuntimeError(f'fhashctl audit: {p.returncode} {p.stderr[-300:]}')
            return time.monotonic() - t0

        for cache in ('cold', 'hot'):
            for what in ('init', 'check'):
                for _ in range(repeat):
                    for tool in ('fhashctl', 'aide'):
                        if cache == 'cold':
                            drop(tree)
                        else:
                            # Hot: what the other tool read is cached; one more read of our own.
                            (fh if tool == 'fhashctl' else (lambda w: aide(conf, w, workers)[0]))(what)
                        wall = fh(what) if tool == 'fhashctl' else aide(conf, what, workers)[0]
                        key = (tool, what, cache)
                        runs[key] = min(runs.get(key, wall), wall)
                        log(f'  {tool} {what} {cache}: {wall:.2f} s')
        rows = []
        for cache in ('cold', 'hot'):
            for what in ('init', 'check'):
                f, ad = runs[('fhashctl', what, cache)], runs[('aide', what, cache)]
                rows.append({'what': what, 'cache': cache, 'fhashctl_s': round(f, 2), 'aide_s': round(ad, 2),
                             'aide_over_fhashctl': round(ad / f, 2)})
        return {'tree': tree, 'files': nfiles, 'aide_workers': workers, 'rows': rows}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run(a, log=print):
    if not shutil.which('aide'):
        return {'skipped': 'aide is not installed (scripts/deps.sh: fhash_bench_packages)'}
    if os.geteuid() != 0:
        return {'skipped': 'needs root (a chown, the page cache of the tree)'}
    version = subprocess.run(['aide', '--version'], capture_output=True, text=True).stdout.split('\n')[0].strip()
    with Daemon(a.fhashd) as d:
        log('detection, one change of each kind:')
        det = detection(a, d.address, log)
        log(f'time on {a.audit_tree}:')
        tim = timing(a, d.address, a.audit_tree, a.repeat or 2, log)
    return {'aide': version, 'aide_rule': AIDE_RULE, 'detection': det, 'timing': tim}


def table(r):
    if 'skipped' in r:
        return f'audit section skipped: {r["skipped"]}'
    t = r['timing']
    out = [f'fhashctl audit vs {r["aide"]} (--workers={t["aide_workers"]}, {r["aide_rule"]}) on {t["tree"]} '
           f'({t["files"]} files), through fhashd, best of the runs',
           f'{"":<7} {"cache":<5} {"fhashctl s":>10} {"aide s":>8} {"aide / fhashctl":>16}']
    for row in t['rows']:
        out.append(f'{row["what"]:<7} {row["cache"]:<5} {row["fhashctl_s"]:>10.2f} {row["aide_s"]:>8.2f} '
                   f'{row["aide_over_fhashctl"]:>16.2f}')
    out.append('what each reports, one change of each kind (fhashctl audit --attributes; aide\'s flags):')
    for row in r['detection']:
        out.append(f'  {row["change"]:<46} fhashctl: {row["fhashctl"]:<32} aide: {row["aide"]}')
    return '\n'.join(out)
