# SPDX-License-Identifier: MIT
"""fhash: hash files through fhashd, the file-hashing service, or in this process where it cannot be
reached, with libfhash (ctypes over libfhash.so.0).

    import fhash
    with fhash.Client() as client:                  # the system bus; Client(address=...) for another
        for r in client.hash(["/etc/passwd", "/etc/group"], algo="sha256"):
            print(r.digest if r.ok else r.message, r.name)

Results come in the order the files were given. A file that cannot be read is a Result with an error,
not an exception; exceptions are for a run that cannot happen: fhash.Error, or the subclass named
after the D-Bus error (Busy, AccessDenied, InvalidArgs, ...).

ctypes rather than a C extension: libfhash's API is a handful of plain C functions and structs, the
module then needs no compiler and no Python headers to build, and one module works with every
Python 3 that Debian ships.
"""

import asyncio
import collections
import ctypes
import errno as _errno
import os
import time
from typing import Iterable, Iterator, List, NamedTuple, Optional, Sequence, Union

__all__ = ["Client", "Run", "Result", "Error", "Busy", "AccessDenied", "InvalidArgs", "NotReachable", "algorithms",
           "version", "OK", "MISMATCH", "CHANGED", "ERROR", "CANCELLED", "SKIPPED"]

_lib = ctypes.CDLL(os.environ.get("FHASH_LIBRARY") or "libfhash.so.0")


# The structs of <fhash/fhash.h>, field by field; _check_sizes() holds them to the library's own sizes.
class _Error(ctypes.Structure):
    _fields_ = [("error", ctypes.c_int), ("name", ctypes.c_char * 128), ("message", ctypes.c_char * 512),
                ("reserved", ctypes.c_uint64 * 4)]


class _ClientOptions(ctypes.Structure):
    _fields_ = [("bus", ctypes.c_int), ("address", ctypes.c_char_p), ("flags", ctypes.c_uint),
                ("busy_notice", ctypes.c_void_p), ("notice_userdata", ctypes.c_void_p),
                ("reserved", ctypes.c_uint64 * 8)]


class _Result(ctypes.Structure):
    _fields_ = [("index", ctypes.c_size_t), ("name", ctypes.c_char_p), ("size", ctypes.c_uint64),
                ("digest", ctypes.c_char_p), ("error", ctypes.c_int), ("message", ctypes.c_char_p),
                ("skip", ctypes.c_char_p), ("status", ctypes.c_int), ("algorithm", ctypes.c_char_p),
                ("expected", ctypes.c_char_p), ("userdata", ctypes.c_void_p), ("reserved", ctypes.c_uint64 * 4)]


class _HashOptions(ctypes.Structure):
    _fields_ = [("algorithm", ctypes.c_char_p), ("expected", ctypes.POINTER(ctypes.c_char_p)),
                ("flags", ctypes.c_uint), ("strategy", ctypes.c_char_p), ("length_bits", ctypes.c_uint),
                ("key", ctypes.POINTER(ctypes.c_uint8)), ("derive_key", ctypes.c_char_p),
                ("max_size", ctypes.c_uint64), ("reserved", ctypes.c_uint64 * 8)]


_ResultFn = ctypes.CFUNCTYPE(None, ctypes.POINTER(_Result), ctypes.c_void_p)

_lib.fhash_client_new.argtypes = [ctypes.POINTER(_ClientOptions), ctypes.POINTER(ctypes.c_void_p),
                                  ctypes.POINTER(_Error)]
_lib.fhash_client_new.restype = ctypes.c_int
_lib.fhash_client_free.argtypes = [ctypes.c_void_p]
_lib.fhash_client_free.restype = ctypes.c_void_p
_lib.fhash_client_uses_daemon.argtypes = [ctypes.c_void_p]
_lib.fhash_client_uses_daemon.restype = ctypes.c_int
_lib.fhash_hash_paths.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_char_p), ctypes.c_size_t,
                                  ctypes.POINTER(_HashOptions), _ResultFn, ctypes.c_void_p, ctypes.POINTER(_Error)]
_lib.fhash_hash_paths.restype = ctypes.c_int
_lib.fhash_hash_fds.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_char_p),
                                ctypes.c_size_t, ctypes.POINTER(_HashOptions), _ResultFn, ctypes.c_void_p,
                                ctypes.POINTER(_Error)]
_lib.fhash_hash_fds.restype = ctypes.c_int
_lib.fhash_run_paths.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_char_p), ctypes.c_size_t,
                                 ctypes.POINTER(_HashOptions), _ResultFn, ctypes.c_void_p,
                                 ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(_Error)]
_lib.fhash_run_paths.restype = ctypes.c_int
_lib.fhash_run_get_fd.argtypes = [ctypes.c_void_p]
_lib.fhash_run_get_fd.restype = ctypes.c_int
_lib.fhash_run_get_events.argtypes = [ctypes.c_void_p]
_lib.fhash_run_get_events.restype = ctypes.c_int
_lib.fhash_run_get_timeout.argtypes = [ctypes.c_void_p]
_lib.fhash_run_get_timeout.restype = ctypes.c_uint64
_lib.fhash_run_process.argtypes = [ctypes.c_void_p, ctypes.POINTER(_Error)]
_lib.fhash_run_process.restype = ctypes.c_int
class _Progress(ctypes.Structure):
    _fields_ = [("files_done", ctypes.c_size_t), ("files_total", ctypes.c_size_t), ("complete", ctypes.c_int),
                ("bytes_done", ctypes.c_uint64), ("bytes_total", ctypes.c_uint64), ("reserved", ctypes.c_uint64 * 4)]


_lib.fhash_run_get_progress.argtypes = [ctypes.c_void_p, ctypes.POINTER(_Progress)]
_lib.fhash_run_get_progress.restype = ctypes.c_int
_lib.fhash_run_cancel.argtypes = [ctypes.c_void_p]
_lib.fhash_run_cancel.restype = ctypes.c_int
_lib.fhash_run_free.argtypes = [ctypes.c_void_p]
_lib.fhash_run_free.restype = ctypes.c_void_p
class _Input(ctypes.Structure):
    _fields_ = [("path", ctypes.c_char_p), ("fd", ctypes.c_int), ("name", ctypes.c_char_p),
                ("expected", ctypes.c_char_p), ("algorithm", ctypes.c_char_p), ("length_bits", ctypes.c_uint),
                ("error", ctypes.c_int), ("skip", ctypes.c_char_p), ("userdata", ctypes.c_void_p),
                ("reserved", ctypes.c_uint64 * 4)]


_SourceFn = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(_Input))
_lib.fhash_run_source.argtypes = [ctypes.c_void_p, _SourceFn, ctypes.c_void_p, ctypes.POINTER(_HashOptions),
                                  _ResultFn, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(_Error)]
_lib.fhash_run_source.restype = ctypes.c_int
_lib.fhash_algorithms.argtypes = []
_lib.fhash_algorithms.restype = ctypes.POINTER(ctypes.c_char_p)
_lib.fhash_version.argtypes = []
_lib.fhash_version.restype = ctypes.c_char_p


def _check_sizes():
    """The structs above are copies of the C ones: a library built from another header (a field added,
    an ABI changed) would be misread without a word. Its own sizes must be ours, or nothing is called."""
    try:
        size = _lib.fhash_struct_size
    except AttributeError:
        raise ImportError(f"fhash: {_lib._name} has no fhash_struct_size(): older than this module "
                          "(LIBFHASH_0.2 or later needed)") from None
    size.argtypes = [ctypes.c_char_p]
    size.restype = ctypes.c_size_t
    for name, cls in (("fhash_error", _Error), ("fhash_client_options", _ClientOptions), ("fhash_result", _Result),
                      ("fhash_hash_options", _HashOptions), ("fhash_progress", _Progress), ("fhash_input", _Input)):
        theirs = size(name.encode())
        if theirs != ctypes.sizeof(cls):
            raise ImportError(f"fhash: {name} is {theirs} bytes in {_lib._name} but {ctypes.sizeof(cls)} here: "
                              "the module and the library are from different versions")


_check_sizes()
_lib.fhash_status_to_string.argtypes = [ctypes.c_int]
_lib.fhash_status_to_string.restype = ctypes.c_char_p
# fhash_result.status, as Result.status names it.
OK, MISMATCH, CHANGED, ERROR, CANCELLED, SKIPPED = "ok", "mismatch", "changed", "error", "cancelled", "skipped"
_STATUS = {i: _lib.fhash_status_to_string(i).decode() for i in range(6)}

_BUS = {"system": 0, "user": 1}
_CLIENT_LOCAL, _CLIENT_NO_FALLBACK, _CLIENT_NO_DIRECT = 1, 2, 4
_HASH_DONTCACHE, _HASH_UNORDERED = 1, 4


class Error(Exception):
    """A run that could not happen. errno is the positive errno value, name the D-Bus error name (or
    None), message what fhashd or libfhash said."""

    def __init__(self, errno: int, name: Optional[str], message: str):
        super().__init__(message)
        self.errno, self.name, self.message = errno, name, message


class Busy(Error):
    """org.fhash.Hasher1.Error.Busy: a per-user limit of fhashd; try again later."""


class AccessDenied(Error):
    """org.freedesktop.DBus.Error.AccessDenied or org.fhash.Hasher1.Error.AccessDenied."""


class InvalidArgs(Error):
    """org.freedesktop.DBus.Error.InvalidArgs, or arguments libfhash refused (EINVAL)."""


class NotReachable(Error):
    """No fhashd could be reached, and the client was told not to hash in-process."""


_BY_NAME = {
    "org.fhash.Hasher1.Error.Busy": Busy,
    "org.fhash.Hasher1.Error.AccessDenied": AccessDenied,
    "org.freedesktop.DBus.Error.AccessDenied": AccessDenied,
    "org.freedesktop.DBus.Error.InvalidArgs": InvalidArgs,
}


def _raise(e: _Error):
    name = e.name.decode(errors="replace") or None
    errno = -e.error
    cls = _BY_NAME.get(name or "") or (InvalidArgs if errno == _errno.EINVAL else
                                         NotReachable if errno == _errno.ENOTCONN else Error)
    raise cls(errno, name, e.message.decode(errors="replace"))


class Result(NamedTuple):
    """One file's outcome. status says what happened: OK, MISMATCH (not the expected digest, which digest
    still holds), CHANGED (the file changed while it was read), ERROR (error and message say why: an errno
    as fhashd's error names class it, the same through fhashd and in-process), CANCELLED, SKIPPED. error is
    0 or a positive errno; beside MISMATCH, CHANGED and CANCELLED it is EBADMSG, ESTALE and ECANCELED."""
    index: int
    name: str
    size: int
    digest: Optional[str]
    error: int
    message: Optional[str]
    status: str = OK

    @property
    def ok(self) -> bool:
        return self.status == OK


PathLike = Union[str, bytes, os.PathLike]


def _result(r: _Result) -> Result:
    return Result(r.index, os.fsdecode(r.name), r.size, r.digest.decode() if r.digest else None, -r.error,
                  r.message.decode(errors="replace") if r.message else None, _STATUS.get(r.status, ERROR))


async def _ready(loop, fd: int, events: int, deadline_usec: int):
    """Until fd is ready for the poll(2) events (POLLIN 1, POLLOUT 4) or the CLOCK_MONOTONIC deadline."""
    fut = loop.create_future()

    def wake():
        if not fut.done():
            fut.set_result(None)
    watched = []
    if fd >= 0 and events & 1:
        loop.add_reader(fd, wake)
        watched.append(loop.remove_reader)
    if fd >= 0 and events & 4:
        loop.add_writer(fd, wake)
        watched.append(loop.remove_writer)
    try:
        # UINT64_MAX: no deadline, only the fd.
        await asyncio.wait_for(fut, None if deadline_usec == 2**64 - 1 else
                               max(0.0, deadline_usec / 1e6 - time.monotonic()))
    except asyncio.TimeoutError:
        pass
    finally:
        for remove in watched:
            remove(fd)


def _source(inputs: Iterable, stop=None) -> "_SourceFn":
    """A libfhash source over an iterable of paths, open files (ints or objects with fileno()) or
    (path_or_file, expected_hex) pairs, pulled one at a time as the run has room. Once stop (a list)
    is not empty, the source ends: nothing more is pulled."""
    it = iter(inputs)
    keep = []  # the strings of the last input, alive until the next call

    def next_input(_, ret):
        if stop:
            return 0
        try:
            item = next(it)
        except StopIteration:
            return 0
        except Exception:  # the iterable failed: end the run with EIO
            return -_errno.EIO
        expected = None
        if isinstance(item, tuple):
            item, expected = item
        r = ret.contents
        if isinstance(item, int) or hasattr(item, "fileno"):
            r.path, r.fd = None, item if isinstance(item, int) else item.fileno()
        else:
            r.path, r.fd = os.fsencode(item), -1
        r.name = None
        r.expected = expected.encode() if expected else None
        keep[:] = [r.path, r.expected]
        return 1

    return _SourceFn(next_input)


class Run:
    """A run started by Client.start(): results accumulate in .results, in order, as process()
    delivers them."""

    def __init__(self, client, paths, algo, expected, dontcache):
        names = [os.fsencode(p) for p in paths]
        if expected is not None and len(expected) != len(names):
            raise InvalidArgs(_errno.EINVAL, None, f"{len(expected)} expected digests for {len(names)} files")
        arr = (ctypes.c_char_p * max(1, len(names)))(*names)
        exp = (ctypes.c_char_p * max(1, len(names)))(*[(e or "").encode() for e in expected]) if expected else None
        opts = _HashOptions(algo.encode(), ctypes.cast(exp, ctypes.POINTER(ctypes.c_char_p)) if exp else None,
                            _HASH_DONTCACHE if dontcache else 0)
        self.results: List[Result] = []
        self._cb = _ResultFn(lambda r, _: self.results.append(_result(r.contents)))
        self._handle, err = ctypes.c_void_p(), _Error()
        if _lib.fhash_run_paths(client._check(), arr, len(names), ctypes.byref(opts), self._cb, None,
                                ctypes.byref(self._handle), ctypes.byref(err)) < 0:
            self._handle = None
            _raise(err)

    def process(self) -> bool:
        """Does what is ready without blocking: True while the run goes on."""
        err = _Error()
        k = _lib.fhash_run_process(self._handle, ctypes.byref(err))
        if k < 0:
            _raise(err)
        return k > 0

    @property
    def fd(self) -> int:
        return _lib.fhash_run_get_fd(self._handle)

    @property
    def events(self) -> int:
        return _lib.fhash_run_get_events(self._handle)

    @property
    def timeout(self) -> int:
        """CLOCK_MONOTONIC µs (time.monotonic() * 1e6) by which to call process() at the latest;
        2**64 - 1: none, only when the fd says."""
        return _lib.fhash_run_get_timeout(self._handle)

    def progress(self):
        """(files_done, files_total, bytes_done, bytes_total)."""
        p = _Progress()
        _lib.fhash_run_get_progress(self._handle, ctypes.byref(p))
        return (p.files_done, p.files_total, p.bytes_done, p.bytes_total)

    def cancel(self):
        """Files not done end with ECANCELED; go on calling process() until it returns False."""
        _lib.fhash_run_cancel(self._handle)

    def close(self):
        if self._handle:
            _lib.fhash_run_free(self._handle)
            self._handle = None

    def __del__(self):
        self.close()


def _wait(run: Run):
    """Blocks until the run's fd is ready or its timeout passes."""
    import select
    p = select.poll()
    if run.fd >= 0:
        p.register(run.fd, run.events)
    t = run.timeout
    p.poll(None if t == 2**64 - 1 else max(0, int((t / 1e6 - time.monotonic()) * 1000)))


class Client:
    """A connection to fhashd (or, where it cannot be reached and fallback is allowed, the engine in
    this process). One thread at a time; use one Client per thread."""

    def __init__(self, address: Optional[str] = None, bus: str = "system", local: bool = False,
                 fallback: bool = True, direct: bool = True):
        self._handle = None
        opts = _ClientOptions(2 if address else _BUS[bus], address.encode() if address else None,
                              (_CLIENT_LOCAL if local else 0) | (0 if fallback or local else _CLIENT_NO_FALLBACK) |
                              (0 if direct else _CLIENT_NO_DIRECT))
        handle, err = ctypes.c_void_p(), _Error()
        if _lib.fhash_client_new(ctypes.byref(opts), ctypes.byref(handle), ctypes.byref(err)) < 0:
            _raise(err)
        self._handle = handle

    @property
    def uses_daemon(self) -> bool:
        """True when files go to fhashd, False when they are hashed in this process."""
        return bool(_lib.fhash_client_uses_daemon(self._check()))

    def _check(self):
        if not self._handle:
            raise ValueError("the client is closed")
        return self._handle

    def hash(self, paths_or_files: Iterable, algo: str = "sha256",
             expected: Optional[Sequence[Optional[str]]] = None, dontcache: bool = False,
             max_size: int = 0) -> List[Result]:
        """Hashes the files (blocking) and returns a Result per file, in order: paths, or open files
        (ints or objects with fileno(), read from their start and left open) among them. algo may
        join up to four algorithms with ',' (each file is read once); digests are then joined by ','
        too. results() is the same as a generator."""
        items = list(paths_or_files)
        if any(isinstance(x, int) or hasattr(x, "fileno") for x in items):
            if expected is not None:
                if len(expected) != len(items):
                    raise InvalidArgs(_errno.EINVAL, None, f"{len(expected)} expected digests for {len(items)} files")
                items = [(x, e) if e else x for x, e in zip(items, expected)]
            return list(self.results(items, algo, dontcache, max_size=max_size))
        names = [os.fsencode(p) for p in items]
        arr = (ctypes.c_char_p * max(1, len(names)))(*names)
        return self._run(lambda *a: _lib.fhash_hash_paths(self._check(), arr, len(names), *a), len(names), algo,
                         expected, dontcache, max_size)

    def hash_files(self, files: Iterable, names: Optional[Sequence[Optional[str]]] = None, algo: str = "sha256",
                   expected: Optional[Sequence[Optional[str]]] = None, dontcache: bool = False) -> List[Result]:
        """hash() for open files: ints or objects with fileno(). Each is read from its start (a pipe from
        where it is); the files stay open and a regular file's offset is left as it was."""
        fds = [f if isinstance(f, int) else f.fileno() for f in files]
        arr = (ctypes.c_int * max(1, len(fds)))(*fds)
        labels = None
        if names is not None:
            labels = (ctypes.c_char_p * max(1, len(fds)))(*[os.fsencode(x) if x is not None else None for x in names])
        return self._run(lambda *a: _lib.fhash_hash_fds(
            self._check(), arr, ctypes.cast(labels, ctypes.POINTER(ctypes.c_char_p)) if labels else None, len(fds),
            *a), len(fds), algo, expected, dontcache)

    def _run(self, call, n, algo, expected, dontcache, max_size=0) -> List[Result]:
        if expected is not None and len(expected) != n:
            raise InvalidArgs(_errno.EINVAL, None, f"{len(expected)} expected digests for {n} files")
        exp = None
        if expected is not None:
            exp = (ctypes.c_char_p * max(1, n))(*[(e or "").encode() for e in expected])
        opts = _HashOptions(algo.encode(), ctypes.cast(exp, ctypes.POINTER(ctypes.c_char_p)) if exp else None,
                            _HASH_DONTCACHE if dontcache else 0, max_size=max_size)
        results: List[Result] = []

        def on_result(r, _):
            results.append(_result(r.contents))

        err = _Error()
        cb = _ResultFn(on_result)
        if call(ctypes.byref(opts), cb, None, ctypes.byref(err)) < 0:
            _raise(err)
        return results

    def hash_stream(self, inputs: Iterable, algo: str = "sha256", dontcache: bool = False,
                    on_result=None, unordered: bool = False) -> List[Result]:
        """hash() over an iterable consumed as the run has room (a walk can go on while the first
        files are hashed): items are paths, open files (ints or objects with fileno()), or
        (path_or_file, expected_hex) pairs. on_result, if given, gets each Result as soon as it is in
        order, while the iterable is still being read; the list of all comes back at the end.
        unordered: results as files complete (Result.index says which), so that a slow file does
        not hold the others back."""
        results: List[Result] = []
        for r in self.results(inputs, algo, dontcache, unordered):
            results.append(r)
            if on_result:
                on_result(r)
        return results

    def results(self, inputs: Iterable, algo: str = "sha256", dontcache: bool = False,
                unordered: bool = False, max_size: int = 0) -> Iterator[Result]:
        """A generator: hashes paths or open files (or (path_or_file, expected_hex) pairs), pulled
        from the iterable as the run has room, and yields each Result as soon as it is known, in
        order (or as files complete with unordered=True). Nothing is held but what is in flight, so
        an iterable of millions of files is fine. Leaving the loop early cancels the files in flight
        and pulls nothing more from the iterable."""
        pending: collections.deque = collections.deque()
        cb = _ResultFn(lambda r, _: pending.append(_result(r.contents)))
        stop: List[bool] = []
        src = _source(inputs, stop)
        opts = _HashOptions(algo.encode(), None, (_HASH_DONTCACHE if dontcache else 0) |
                            (_HASH_UNORDERED if unordered else 0), max_size=max_size)
        handle, err = ctypes.c_void_p(), _Error()
        if _lib.fhash_run_source(self._check(), src, None, ctypes.byref(opts), cb, None, ctypes.byref(handle),
                                 ctypes.byref(err)) < 0:
            _raise(err)
        run = Run.__new__(Run)
        run._handle, run._cb, run._src, run.results = handle, cb, src, pending
        done = False
        try:
            while True:
                going = run.process()
                while pending:
                    yield pending.popleft()
                if not going:
                    done = True
                    return
                _wait(run)
        finally:
            if not done:  # the caller stopped early (or an error): pull no more, end fhashd's jobs
                stop.append(True)
                run.cancel()
                try:
                    while run.process():
                        _wait(run)
                except Error:
                    pass
            run.close()

    def start(self, paths: Iterable[PathLike], algo: str = "sha256",
              expected: Optional[Sequence[Optional[str]]] = None, dontcache: bool = False) -> "Run":
        """Starts hashing without waiting: a Run for the caller's own event loop (poll run.fd for
        run.events until run.timeout, then run.process()). hash_async() is this on asyncio."""
        return Run(self, paths, algo, expected, dontcache)

    async def hash_async(self, paths: Iterable[PathLike], algo: str = "sha256",
                         expected: Optional[Sequence[Optional[str]]] = None, dontcache: bool = False,
                         on_progress=None) -> List[Result]:
        """hash() on the running asyncio loop: libfhash's run is driven from the loop's own fd
        watching (fhash_run_*), so the loop goes on meanwhile and no thread is used. on_progress, if
        given, is called as on_progress(files_done, files_total, bytes_done, bytes_total) whenever
        the run has moved, and once at the end. Cancelling the task cancels the run (fhashd's jobs
        too) before CancelledError goes on."""
        run = self.start(paths, algo, expected, dontcache)
        loop = asyncio.get_running_loop()
        last = None
        try:
            while True:
                going = run.process()
                if on_progress and run.progress() != last:
                    last = run.progress()
                    on_progress(*last)
                if not going:
                    return run.results
                await _ready(loop, run.fd, run.events, run.timeout)
        except asyncio.CancelledError:
            run.cancel()
            while run.process():
                _wait(run)
            raise
        finally:
            run.close()

    def close(self):
        if self._handle:
            _lib.fhash_client_free(self._handle)
            self._handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()


def algorithms() -> List[str]:
    """The algorithm names libfhash and fhashd know, in the order of fhashd's Algorithms property."""
    names, arr, i = [], _lib.fhash_algorithms(), 0
    while arr[i]:
        names.append(arr[i].decode())
        i += 1
    return names


def version() -> str:
    return _lib.fhash_version().decode()
