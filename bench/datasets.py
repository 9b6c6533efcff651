# SPDX-License-Identifier: MIT
"""The data sets: what they are, how they are made (the same bytes on every machine where it matters),
where they live, and their state in the page cache (warm, drop, residency)."""

import ctypes
import os
import random
import shutil
import subprocess

from .common import GiB, KiB, MiB, human_size, short_size

# Data sets per mode: name -> (kind, count, size). 'file' = one file, 'set' = a directory of equal
# files, 'tree' = the mixed tree (count files, sizes log-distributed up to size; see tree_layout()).
DATASETS = {
    'full': {'big': ('file', 1, 4 * GiB), 'small': ('set', 20000, 4 * KiB), 'mid': ('set', 2000, MiB),
             'mixed': ('tree', 2000, 256 * MiB), 'sweep': ('file', 1, GiB)},
    # quick's small set is the full one (80 MB, the same files): on 2,000 files an `xargs -P` peer is
    # mostly its processes' start-up, and the sha256-small-xargs ratio would measure that jitter.
    'quick': {'big': ('file', 1, 512 * MiB), 'small': ('set', 20000, 4 * KiB), 'mid': ('set', 200, MiB),
              'mixed': ('tree', 400, 64 * MiB), 'sweep': ('file', 1, 512 * MiB)},
}
# The mixed tree: counts per octave of size are equal (log-uniform) until an octave's bytes would
# pass TREE_OCTAVE_BYTES; above that each octave holds about that many bytes (so the counts halve
# per octave), at least one file, and the largest file is exactly the maximum size. With 2,000 files
# up to 256 MiB that is ~1,650 files, ~2.6 GiB; 1/30 of them empty.
TREE_SEED = 20261121
TREE_OCTAVE_BYTES = {'full': 400 * MiB, 'quick': 40 * MiB}


def tree_layout(seed, count, max_size, octave_bytes):
    """The mixed tree, as [(relative path, size)], the same for a given seed: see TREE_OCTAVE_BYTES.
    Directories nest up to four deep; the list is sorted, as a sorted tree walk gives it."""
    rng = random.Random(seed)
    top = max_size.bit_length() - 1
    per = count // (top + 2)
    sizes = [0] * per
    for k in range(top):   # octave [2^k, 2^(k+1))
        n = min(per, max(1, int(octave_bytes // (1.5 * 2 ** k))))
        sizes += [min(max_size, int(2 ** rng.uniform(k, k + 1))) for _ in range(n)]
    sizes.append(max_size)
    rng.shuffle(sizes)
    dirs = ['']
    for i in range(max(4, len(sizes) // 20)):
        parent = rng.choice([d for d in dirs if d.count('/') < 3])
        dirs.append(f'{parent}/d{i:03d}' if parent else f'd{i:03d}')
    files = []
    for i, size in enumerate(sizes):
        d = rng.choice(dirs)
        files.append((f'{d}/f{i:05d}.bin' if d else f'f{i:05d}.bin', size))
    return sorted(files)


# ---- page-cache residency -------------------------------------------------------------------------
def _libc():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                          ctypes.c_long]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_ubyte)]
    libc.syscall.restype = ctypes.c_long
    return libc


def resident_mincore(path):
    """Bytes of path in the page cache: mmap + mincore(2) (maps without touching, so measures only)."""
    size = os.path.getsize(path)
    libc = _libc()
    page = os.sysconf('SC_PAGE_SIZE')
    fd = os.open(path, os.O_RDONLY)
    try:
        addr = libc.mmap(None, size, 1, 1, fd, 0)   # PROT_READ, MAP_SHARED
        if addr is None or addr == ctypes.c_void_p(-1).value:
            e = ctypes.get_errno()
            raise OSError(e, f'mmap: {os.strerror(e)}')
        try:
            n = (size + page - 1) // page
            vec = (ctypes.c_ubyte * n)()
            if libc.mincore(addr, size, vec) != 0:
                e = ctypes.get_errno()
                raise OSError(e, f'mincore: {os.strerror(e)}')
            data = bytes(vec)
            return min(size, (n - data.count(0)) * page)  # only bit 0 is defined; the rest are 0
        finally:
            libc.munmap(addr, size)
    finally:
        os.close(fd)


def resident_cachestat(path):
    """Bytes of path in the page cache: cachestat(2) (syscall 451, Linux 6.5+)."""
    class Range(ctypes.Structure):
        _fields_ = [('off', ctypes.c_uint64), ('len', ctypes.c_uint64)]

    class Stat(ctypes.Structure):
        _fields_ = [(n, ctypes.c_uint64) for n in ('nr_cache', 'nr_dirty', 'nr_writeback', 'nr_evicted',
                                                   'nr_recently_evicted')]
    libc = _libc()
    rng, st = Range(0, 0), Stat()   # len 0: to the end of the file
    fd = os.open(path, os.O_RDONLY)
    try:
        if libc.syscall(ctypes.c_long(451), ctypes.c_int(fd), ctypes.byref(rng), ctypes.byref(st),
                        ctypes.c_uint(0)) != 0:
            e = ctypes.get_errno()
            raise OSError(e, f'cachestat: {os.strerror(e)}')
    finally:
        os.close(fd)
    return min(os.path.getsize(path), st.nr_cache * os.sysconf('SC_PAGE_SIZE'))


def resident_fincore(path):
    p = subprocess.run(['fincore', '--bytes', '--noheadings', '--output', 'RES', path], capture_output=True,
                       text=True, check=False)
    if p.returncode != 0 or not p.stdout.strip().isdigit():
        raise OSError(0, f'fincore: {p.stderr.strip() or p.stdout.strip()}')
    return int(p.stdout.strip())


RESIDENCY_METHODS = {'fincore': resident_fincore, 'mincore': resident_mincore, 'cachestat': resident_cachestat}


def cached_fraction(path, method=None):
    """(share of path in the page cache, the method used): fincore from util-linux if installed, else
    mmap + mincore(2), else cachestat(2). $FHASH_BENCH_RESIDENCY forces one (for testing the others)."""
    size = os.path.getsize(path)
    method = method or os.environ.get('FHASH_BENCH_RESIDENCY')
    order = [method] if method else (['fincore'] if shutil.which('fincore') else []) + ['mincore', 'cachestat']
    last = None
    for m in order:
        try:
            return (RESIDENCY_METHODS[m](path) / size if size else 0.0), m
        except (OSError, AttributeError, KeyError) as e:
            last = e
    raise RuntimeError(f'page-cache residency of {path}: {last}')


class DataSets:
    """The data sets of one mode ('full' or 'quick') under data_dir; say() reports what is made."""

    def __init__(self, mode, data_dir, say):
        self.mode = mode
        self.specs = DATASETS[mode]
        self.data_dir = data_dir
        self.say = say
        self.residency_method = None
        self._sizes = {}

    def path(self, name):
        kind, count, size = self.specs[name]
        if kind == 'file':
            return os.path.join(self.data_dir, f'file-{short_size(size)}.bin')
        if kind == 'tree':
            return os.path.join(self.data_dir, f'tree-{count}-{short_size(size)}-s{TREE_SEED}')
        return os.path.join(self.data_dir, f'set-{count}x{short_size(size)}')

    def label(self, name):
        kind, count, size = self.specs[name]
        if kind == 'file':
            return human_size(size)
        if kind == 'tree':
            _, names = self.files(name) if os.path.exists(self.path(name) + '.list') else (0, [])
            n = len(names) or count
            return f'mixed {n} files'
        return f'{count} x {human_size(size)}'

    def title(self, name):
        kind, count, size = self.specs[name]
        if kind == 'tree':
            _, names = self.files(name)
            return (f'mixed tree: {len(names):,} files of 0 B to {human_size(size)}, log-distributed, '
                    f'{self.nbytes(name) / GiB:.2f} GiB')
        if kind == 'file':
            return f'{human_size(size)} file'
        return f'{count:,} × {human_size(size)} files'

    def make_file(self, path, size):
        if os.path.exists(path) and os.path.getsize(path) == size:
            return
        self.say(f'# making {path} ({human_size(size)} from os.urandom) ...')
        tmp = path + '.tmp'
        with open(tmp, 'wb') as f:
            left = size
            while left:
                chunk = os.urandom(min(left, 16 * MiB))
                f.write(chunk)
                left -= len(chunk)
        os.rename(tmp, path)

    def make_set(self, path, count, size):
        # A set is complete once its list file exists: it is written last, after every member.
        lst = path + '.list'
        if os.path.exists(lst):
            return
        self.say(f'# making {path} ({count} files of {human_size(size)}) ...')
        os.makedirs(path, exist_ok=True)
        names = []
        for i in range(count):
            name = f'f{i:06d}.bin'
            with open(os.path.join(path, name), 'wb') as f:
                f.write(os.urandom(size))
            names.append(name)
        with open(lst + '.tmp', 'w') as f:
            f.write(''.join(n + '\n' for n in names))
        os.rename(lst + '.tmp', lst)

    def make_tree(self, path, count, max_size):
        """The mixed tree; layout and content both follow from TREE_SEED, so every machine hashes the
        same bytes. Content is a 16 MiB seeded pool read from a seeded offset per file."""
        lst = path + '.list'
        if os.path.exists(lst):
            return
        files = tree_layout(TREE_SEED, count, max_size, TREE_OCTAVE_BYTES[self.mode])
        total = sum(s for _, s in files)
        self.say(f'# making {path} ({len(files)} files, {total / GiB:.2f} GiB, seed {TREE_SEED}) ...')
        rng = random.Random(TREE_SEED + 1)
        pool = b''.join(rng.randbytes(MiB) for _ in range(16))
        pool2 = memoryview(pool + pool)
        for rel, size in files:
            fn = os.path.join(path, rel)
            os.makedirs(os.path.dirname(fn), exist_ok=True)
            off = rng.randrange(len(pool))
            with open(fn, 'wb') as f:
                left = size
                while left:
                    n = min(left, len(pool))
                    f.write(pool2[off:off + n])
                    left -= n
        with open(lst + '.tmp', 'w') as f:
            f.write(''.join(rel + '\n' for rel, _ in files))
        os.rename(lst + '.tmp', lst)

    def make(self, names):
        os.makedirs(self.data_dir, exist_ok=True)
        for name in names:
            kind, count, size = self.specs[name]
            if kind == 'file':
                self.make_file(self.path(name), size)
            elif kind == 'tree':
                self.make_tree(self.path(name), count, size)
            else:
                self.make_set(self.path(name), count, size)

    def files(self, name):
        """(cwd, [names]) of a data set: the engine and the peers run inside cwd on short names."""
        kind, _, _ = self.specs[name]
        path = self.path(name)
        if kind == 'file':
            return os.path.dirname(path), [os.path.basename(path)]
        with open(path + '.list') as f:
            return path, [line.rstrip('\n') for line in f if line.strip()]

    def nbytes(self, name):
        if name not in self._sizes:
            kind, count, size = self.specs[name]
            if kind == 'tree':
                cwd, names = self.files(name)
                self._sizes[name] = sum(os.path.getsize(os.path.join(cwd, n)) for n in names)
            else:
                self._sizes[name] = count * size
        return self._sizes[name]

    def list_file(self, name):
        kind, _, _ = self.specs[name]
        path = self.path(name)
        return path + '.list' if kind != 'file' else None

    def is_set(self, name):
        return self.specs[name][0] != 'file'

    def warm(self, name):
        cwd, names = self.files(name)
        for n in names:
            with open(os.path.join(cwd, n), 'rb', buffering=0) as f:
                while f.read(4 * MiB):
                    pass

    def can_drop_caches(self):
        return os.geteuid() == 0 and os.access('/proc/sys/vm/drop_caches', os.W_OK)

    def drop(self, name):
        """Evicts a data set from the page cache: sync; echo 3 > drop_caches (root only: the cold
        scenarios are skipped otherwise, see run_cold())."""
        os.sync()
        with open('/proc/sys/vm/drop_caches', 'w') as f:
            f.write('3\n')
        return 'drop_caches'

    def residency(self, name):
        """Share of a single-file data set in the page cache, or None for sets."""
        if self.is_set(name):
            return None
        try:
            frac, method = cached_fraction(self.path(name))
            self.residency_method = method
            return frac
        except RuntimeError as e:
            self.say(f'# {e}')
            return None
