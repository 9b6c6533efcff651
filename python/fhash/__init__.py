# SPDX-License-Identifier: MIT
"""fhash: hash files through fhashd, the file-hashing service, or in this process where it cannot be
reached, with libfhash (ctypes over the system's libfhash.so.0, or $FHASH_LIBRARY).

    import fhash
    with fhash.Client() as client:                  # the system bus; Client(address=...) for another
        for r in client.results(["/etc/passwd", "/etc/group"], algo="sha256"):
            print(r.digest if r.ok else r.message, r.name)

    async def main():
        with fhash.Client() as client:
            async for r in client.aresults(paths):  # the same, on the running asyncio loop
                ...

Results come in the order the files were given (unordered=True: as they complete). A file that
cannot be read is a Result with an error, not an exception; exceptions are for a run that cannot
happen: fhash.Error, or the subclass named after the D-Bus error (Busy, AccessDenied, InvalidArgs,
NotReachable, Gone). Every form takes the same options: algo, dontcache, unordered, max_size,
on_result, on_progress, busy_notice and priority: "normal", "interactive" (before your other jobs) or
"background" (only what nobody else wants: idle CPU and I/O, and fhashd serves every other job first).
"""

import asyncio
import collections
import ctypes
import errno as _errno
import math
import os
import select
import time
from typing import (Any, Callable, Deque, Dict, Iterable, Iterator, List, NamedTuple, Optional, Protocol, Sequence,
                    Set, Tuple, Type, Union, cast)

from . import _capi
from ._capi import lib as _lib

__all__ = ["Client", "Run", "Result", "Input", "AsyncResults", "Error", "Busy", "AccessDenied", "InvalidArgs",
           "NotReachable", "Gone", "algorithms", "version", "OK", "MISMATCH", "CHANGED", "ERROR", "CANCELLED",
           "SKIPPED", "PRIORITIES", "NO_TIMEOUT"]

# fhash_result.status, as Result.status names it.
OK, MISMATCH, CHANGED, ERROR, CANCELLED, SKIPPED = "ok", "mismatch", "changed", "error", "cancelled", "skipped"
_STATUS = {i: (_lib.fhash_status_to_string(i) or b"error").decode() for i in range(6)}
_BUS = {"system": _capi.BUS_SYSTEM, "user": _capi.BUS_USER}
PRIORITIES = _capi.PRIORITIES
# Run.timeout when the run has nothing to do by a time (fhash_run_get_timeout()'s UINT64_MAX): only
# its fd wakes it.
NO_TIMEOUT = 2**64 - 1


class Error(Exception):
    """A run that could not happen. errno is the positive errno value, name the D-Bus error name (or
    None), message what fhashd or libfhash said."""

    def __init__(self, errno: int, name: Optional[str], message: str):
        super().__init__(message)
        self.errno, self.name, self.message = errno, name, message


class Busy(Error):
    """org.fhash.Hasher1.Error.Busy: a per-user limit of fhashd for longer than FHASHCTL_BUSY_TIMEOUT
    seconds (default 300); try again later."""


class AccessDenied(Error):
    """org.freedesktop.DBus.Error.AccessDenied or org.fhash.Hasher1.Error.AccessDenied."""


class InvalidArgs(Error):
    """org.freedesktop.DBus.Error.InvalidArgs, or arguments libfhash refused (EINVAL)."""


class NotReachable(Error):
    """No fhashd could be reached, and the client was told not to hash in-process (fallback=False):
    the message names the bus and its socket."""


class Gone(Error):
    """org.fhash.Hasher1.Error.Gone: fhashd went away during the run (it exited, crashed or was
    restarted); the results so far stand, the rest of the files have none."""


_BY_NAME: Dict[str, Type[Error]] = {
    "org.fhash.Hasher1.Error.Busy": Busy,
    "org.fhash.Hasher1.Error.AccessDenied": AccessDenied,
    "org.fhash.Hasher1.Error.Gone": Gone,
    "org.freedesktop.DBus.Error.AccessDenied": AccessDenied,
    "org.freedesktop.DBus.Error.InvalidArgs": InvalidArgs,
}
_BY_ERRNO: Dict[int, Type[Error]] = {_errno.EINVAL: InvalidArgs, _errno.ENOTCONN: NotReachable,
                                     _errno.ECONNRESET: Gone}


def _error(e: _capi.Error) -> Error:
    name = e.name.decode(errors="replace") or None
    errno = -e.error
    cls = _BY_NAME.get(name or "", _BY_ERRNO.get(errno, Error))
    return cls(errno, name, e.message.decode(errors="replace"))


class Result(NamedTuple):
    """One file's outcome. status says what happened: OK, MISMATCH (not the expected digest, which digest
    still holds), CHANGED (the file changed while it was read), ERROR (error and message say why: an errno
    as fhashd's error names class it, the same through fhashd and in-process), CANCELLED, SKIPPED (given
    with a skip reason, which skip holds). error is 0 or a positive errno; beside MISMATCH, CHANGED and
    CANCELLED it is EBADMSG, ESTALE and ECANCELED. algorithm is the one the file was hashed with,
    expected the digest it was compared with."""
    index: int  # type: ignore[assignment] # a field since the first release, over tuple.index()
    name: str
    size: int
    digest: Optional[str]
    error: int
    message: Optional[str]
    status: str = OK
    skip: Optional[str] = None
    algorithm: Optional[str] = None
    expected: Optional[str] = None

    @property
    def ok(self) -> bool:
        return self.status == OK


class _HasFileno(Protocol):
    def fileno(self) -> int: ...


PathLike = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]
FileLike = Union[int, _HasFileno]


class Input(NamedTuple):
    """One input with everything it may say: a path, or an open file (an fd, or an object with
    fileno(): read from its start, left open), the name its result carries (default: the path, or
    ""), the digest it must have, its own algorithm, or a reason not to hash it at all (its result
    is then SKIPPED, in its turn)."""
    path: Optional[PathLike] = None
    file: Optional[FileLike] = None
    name: Optional[Union[str, bytes]] = None
    expected: Optional[str] = None
    algorithm: Optional[str] = None
    skip: Optional[str] = None


# What the hashing calls take: a path, an open file, (path_or_file, expected_hex), or an Input.
Item = Union[PathLike, FileLike, Tuple[Union[PathLike, FileLike], Optional[str]], Input]
ResultCallback = Callable[[Result], Any]
ProgressCallback = Callable[[int, int, int, int], Any]
BusyCallback = Callable[[str, bool], Any]


def _result(r: _capi.Result) -> Result:
    def text(s: Optional[bytes]) -> Optional[str]:
        return s.decode(errors="replace") if s else None
    return Result(r.index, os.fsdecode(r.name or b""), r.size, text(r.digest), -r.error, text(r.message),
                  _STATUS.get(r.status, ERROR), text(r.skip), text(r.algorithm), text(r.expected))


class _Options(NamedTuple):
    algo: str = "sha256"
    dontcache: bool = False
    unordered: bool = False
    max_size: int = 0
    on_result: Optional[ResultCallback] = None
    on_progress: Optional[ProgressCallback] = None
    busy_notice: Optional[BusyCallback] = None
    priority: str = "normal"


def _priority(priority: str) -> int:
    if priority not in PRIORITIES:
        raise InvalidArgs(_errno.EINVAL, None, f"priority {priority!r} is not one of {', '.join(PRIORITIES)}")
    return PRIORITIES[priority]


def _is_file(x: object) -> bool:
    return isinstance(x, int) or hasattr(x, "fileno")


def _with_expected(items: Iterable[Item], expected: Optional[Sequence[Optional[str]]]) -> Iterable[Item]:
    if expected is None:
        return items
    items = list(items)
    if len(expected) != len(items):
        raise InvalidArgs(_errno.EINVAL, None, f"{len(expected)} expected digests for {len(items)} files")
    return [(x, e) if e else x for x, e in zip(items, expected)]  # type: ignore[misc]


class _Run:
    """One libfhash run over the items of an iterable, pulled as the run has room (fhash_run_source):
    only what is in flight is held. The drivers (Client.results(), AsyncResults) call process() when
    its fd is ready or its timeout has come, and take the results from pending."""

    def __init__(self, client: "Client", items: Iterable[Item], o: _Options):
        self.client, self.options = client, o
        self.pending: Deque[Result] = collections.deque()
        self.stopped = False  # nothing more is pulled, results are dropped
        self.source_error: Optional[BaseException] = None     # the iterable's
        self.callback_error: Optional[BaseException] = None   # busy_notice's
        self.handle: Optional[ctypes.c_void_p] = None
        self._it = iter(items)
        self._keep: List[Optional[bytes]] = []
        self._progress: Optional[Tuple[int, int, int, int]] = None
        self._src = _capi.SourceFn(self._next)
        self._cb = _capi.ResultFn(self._on_result)
        flags = (_capi.HASH_DONTCACHE if o.dontcache else 0) | (_capi.HASH_UNORDERED if o.unordered else 0)
        opts = _capi.HashOptions(o.algo.encode(), None, flags, max_size=o.max_size, priority=_priority(o.priority))
        handle, err = ctypes.c_void_p(), _capi.Error()
        if _lib.fhash_run_source(client._check(), self._src, None, ctypes.byref(opts), self._cb, None,
                                 ctypes.byref(handle), ctypes.byref(err)) < 0:
            raise _error(err)
        self.handle = handle
        client._runs.add(self)

    def _next(self, _: Any, ret: Any) -> int:
        """libfhash's source: the next item, or 0 once stopped or at the end. What the iterable
        raises ends the run; process() raises it, chained."""
        if self.stopped:
            return 0
        try:
            item = next(self._it)
            self._fill(item, ret.contents)
        except StopIteration:
            return 0
        except BaseException as e:  # noqa: B902 - anything, KeyboardInterrupt too, goes to the caller
            self.source_error, self.stopped = e, True
            return -_errno.EIO
        return 1

    def _fill(self, item: Item, r: _capi.Input) -> None:
        what: Any = item
        name: Optional[Union[str, bytes]] = None
        expected: Optional[str] = None
        algorithm: Optional[str] = None
        skip: Optional[str] = None
        if isinstance(item, Input):
            what = item.file if item.path is None else item.path
            name, expected, algorithm, skip = item.name, item.expected, item.algorithm, item.skip
            if what is None:
                raise TypeError("fhash.Input needs a path or a file")
        elif isinstance(item, tuple):
            what, expected = item[0], cast(Optional[str], item[1])
        if _is_file(what):
            r.path, r.fd = None, what if isinstance(what, int) else what.fileno()
        else:
            r.path, r.fd = os.fsencode(what), -1
        r.name = os.fsencode(name) if name is not None else None
        r.expected = expected.encode() if expected else None
        r.algorithm = algorithm.encode() if algorithm else None
        r.skip = skip.encode() if skip else None
        # The strings must last until the next call.
        self._keep = [r.path, r.name, r.expected, r.algorithm, r.skip]

    def _on_result(self, r: Any, _: Any) -> None:
        if not self.stopped:
            self.pending.append(_result(r.contents))

    def process(self) -> bool:
        """Does what is ready without blocking: True while the run goes on. Raises the run's error, or
        what the iterable or a callback raised."""
        if not self.handle:
            return False
        err = _capi.Error()
        self.client._current = self
        try:
            k = int(_lib.fhash_run_process(self.handle, ctypes.byref(err)))
        finally:
            self.client._current = None
        if self.callback_error is not None:
            e, self.callback_error = self.callback_error, None
            self.stop()
            raise e
        if self.source_error is not None:
            e, self.source_error = self.source_error, None
            self.stop()
            if not isinstance(e, Exception):  # KeyboardInterrupt, SystemExit: as they are
                raise e
            raise Error(_errno.EIO, None, f"the iterable of inputs raised {type(e).__name__}: {e}") from e
        if k < 0:
            raise _error(err)
        if self.options.on_progress and not self.stopped:
            p = self.progress()
            if p != self._progress:
                self._progress = p
                self.options.on_progress(*p)
        return k > 0

    def progress(self) -> Tuple[int, int, int, int]:
        p = _capi.Progress()
        if self.handle:
            _lib.fhash_run_get_progress(self.handle, ctypes.byref(p))
        return (p.files_done, p.files_total, p.bytes_done, p.bytes_total)

    @property
    def fd(self) -> int:
        return int(_lib.fhash_run_get_fd(self.handle)) if self.handle else -1

    @property
    def events(self) -> int:
        return int(_lib.fhash_run_get_events(self.handle)) if self.handle else 0

    @property
    def timeout(self) -> int:
        """CLOCK_MONOTONIC µs (time.monotonic() * 1e6) by which to call process() at the latest;
        NO_TIMEOUT: none, only when the fd says."""
        return int(_lib.fhash_run_get_timeout(self.handle)) if self.handle else 0

    def stop(self) -> None:
        """Nothing more is pulled or delivered; libfhash cancels the files in flight (and fhashd's
        jobs). process() goes on until every input it took has its answer."""
        self.stopped = True
        self.pending.clear()
        if self.handle:
            _lib.fhash_run_cancel(self.handle)

    def wind_down(self) -> None:
        """stop(), then process() to the end, waiting here (the synchronous forms), and close()."""
        self.stop()
        try:
            while self.process():
                _wait(self)
        except Exception:  # noqa: B902 - the run's own error changes nothing now
            pass
        self.close()

    def close(self) -> None:
        if self.handle:
            _lib.fhash_run_free(self.handle)
            self.handle = None
            self.client._runs.discard(self)

    def __del__(self) -> None:
        self.close()


class Run:
    """A run started by Client.start(): results accumulate in .results, in order, as process()
    delivers them."""

    def __init__(self, client: "Client", paths: Iterable[PathLike], algo: str = "sha256",
                 expected: Optional[Sequence[Optional[str]]] = None, dontcache: bool = False,
                 priority: str = "normal"):
        names = [os.fsencode(p) for p in paths]
        if expected is not None and len(expected) != len(names):
            raise InvalidArgs(_errno.EINVAL, None, f"{len(expected)} expected digests for {len(names)} files")
        arr = (ctypes.c_char_p * max(1, len(names)))(*names)
        exp = (ctypes.c_char_p * max(1, len(names)))(*[(e or "").encode() for e in expected]) if expected else None
        opts = _capi.HashOptions(algo.encode(), ctypes.cast(exp, ctypes.POINTER(ctypes.c_char_p)) if exp else None,
                                 _capi.HASH_DONTCACHE if dontcache else 0, priority=_priority(priority))
        self.client = client
        self.results: List[Result] = []
        self._cb = _capi.ResultFn(lambda r, _: self.results.append(_result(r.contents)))
        self._handle: Optional[ctypes.c_void_p] = None
        handle, err = ctypes.c_void_p(), _capi.Error()
        if _lib.fhash_run_paths(client._check(), arr, len(names), ctypes.byref(opts), self._cb, None,
                                ctypes.byref(handle), ctypes.byref(err)) < 0:
            raise _error(err)
        self._handle = handle
        client._runs.add(self)

    def process(self) -> bool:
        """Does what is ready without blocking: True while the run goes on."""
        err = _capi.Error()
        k = int(_lib.fhash_run_process(self._handle, ctypes.byref(err)))
        if k < 0:
            raise _error(err)
        return k > 0

    @property
    def fd(self) -> int:
        return int(_lib.fhash_run_get_fd(self._handle))

    @property
    def events(self) -> int:
        return int(_lib.fhash_run_get_events(self._handle))

    @property
    def timeout(self) -> int:
        """CLOCK_MONOTONIC µs (time.monotonic() * 1e6) by which to call process() at the latest;
        NO_TIMEOUT: none, only when the fd says."""
        return int(_lib.fhash_run_get_timeout(self._handle))

    def progress(self) -> Tuple[int, int, int, int]:
        """(files_done, files_total, bytes_done, bytes_total)."""
        p = _capi.Progress()
        _lib.fhash_run_get_progress(self._handle, ctypes.byref(p))
        return (p.files_done, p.files_total, p.bytes_done, p.bytes_total)

    def cancel(self) -> None:
        """Files not done end with ECANCELED; go on calling process() until it returns False."""
        _lib.fhash_run_cancel(self._handle)

    def close(self) -> None:
        if self._handle:
            _lib.fhash_run_free(self._handle)
            self._handle = None
            self.client._runs.discard(self)

    def __del__(self) -> None:
        self.close()


def _wait(run: Union[Run, _Run]) -> None:
    """Blocks until the run's fd is ready or its timeout passes."""
    p = select.poll()
    if run.fd >= 0:
        p.register(run.fd, run.events)
    t = run.timeout
    p.poll(None if t == NO_TIMEOUT else max(0, math.ceil((t / 1e6 - time.monotonic()) * 1000)))


# The readers and writers of each loop's fds, shared by the runs that wait on the same fd (the runs of
# one client all wait on its bus connection): asyncio keeps one callback per fd.
_watchers: Dict[Tuple[int, int, bool], Tuple[asyncio.AbstractEventLoop, Set[Callable[[], None]]]] = {}


def _watch(loop: asyncio.AbstractEventLoop, fd: int, writer: bool, cb: Callable[[], None]) -> None:
    key = (id(loop), fd, writer)
    if key not in _watchers:
        cbs: Set[Callable[[], None]] = set()
        _watchers[key] = (loop, cbs)

        def dispatch() -> None:
            for f in list(cbs):
                f()
        (loop.add_writer if writer else loop.add_reader)(fd, dispatch)
    _watchers[key][1].add(cb)


def _unwatch(loop: asyncio.AbstractEventLoop, fd: int, writer: bool, cb: Callable[[], None]) -> None:
    key = (id(loop), fd, writer)
    entry = _watchers.get(key)
    if entry:
        entry[1].discard(cb)
        if not entry[1]:
            del _watchers[key]
            (loop.remove_writer if writer else loop.remove_reader)(fd)


async def _ready(loop: asyncio.AbstractEventLoop, run: _Run) -> None:
    """Until the run's fd is ready or its timeout has come. A plain await of a future: a cancel of the
    task always gets through (asyncio.wait_for() could swallow one that came as the wait ended)."""
    fd, events = run.fd, run.events
    fut = loop.create_future()

    def wake() -> None:
        if not fut.done():
            fut.set_result(None)
    watched = [w for w, bit in ((False, select.POLLIN), (True, select.POLLOUT)) if fd >= 0 and events & bit]
    for w in watched:
        _watch(loop, fd, w, wake)
    t = run.timeout
    timer = None if t == NO_TIMEOUT else loop.call_later(max(0.0, t / 1e6 - time.monotonic()), wake)
    try:
        await fut
    finally:
        if timer:
            timer.cancel()
        for w in watched:
            _unwatch(loop, fd, w, wake)


# Runs stopped on a loop and still winding down there (their fhashd jobs being cancelled), with the
# task that does it.
_winding: Dict[_Run, "asyncio.Task[None]"] = {}


async def _wind_down(loop: asyncio.AbstractEventLoop, run: _Run) -> None:
    try:
        while run.process():
            await _ready(loop, run)
    except Exception:  # noqa: B902 - the run's own error changes nothing now
        pass


def _wind_down_on(loop: asyncio.AbstractEventLoop, run: _Run) -> None:
    """stop(), then process() in a task of the loop until libfhash has answered every input it took,
    and close(): one non-blocking step at a time, as the fd and timeout say, so that nothing waits for
    it and the loop is never held longer than a step. A loop that ends first (asyncio.run() cancels
    its tasks, perhaps before they ran) abandons the run there."""
    def over(_: "asyncio.Task[None]") -> None:
        run.close()
        _winding.pop(run, None)
    run.stop()
    task = loop.create_task(_wind_down(loop, run))
    _winding[run] = task
    task.add_done_callback(over)


class AsyncResults:
    """What Client.aresults() returns: an async iterator of the Results, each as soon as it is known.
    Leaving it early (break, an exception, aclose(), or the task being cancelled) stops the run at
    once: nothing more is pulled from the inputs, and the run's files are cancelled on the loop in the
    background. Also an async context manager that does that on exit."""

    def __init__(self, run: _Run):
        self._run: Optional[_Run] = run
        self._over = False

    def __aiter__(self) -> "AsyncResults":
        return self

    async def __anext__(self) -> Result:
        run = self._run
        if run is None:
            raise StopAsyncIteration
        loop = asyncio.get_running_loop()
        try:
            while not run.pending and not self._over:
                self._over = not run.process()
                if not run.pending and not self._over:
                    await _ready(loop, run)
        except BaseException:  # noqa: B902 - cancelled (CancelledError), or the run failed
            self._abandon(loop)
            raise
        if not run.pending:
            run.close()
            self._run = None
            raise StopAsyncIteration
        r = run.pending.popleft()
        if run.options.on_result:
            run.options.on_result(r)
        return r

    def _abandon(self, loop: Optional[asyncio.AbstractEventLoop]) -> None:
        run, self._run = self._run, None
        if run is None:
            return
        if self._over:
            run.close()
        elif loop is not None and not loop.is_closed():
            _wind_down_on(loop, run)
        else:
            run.stop()
            run.close()

    async def aclose(self) -> None:
        """Stops the run if it is not over (see the class)."""
        self._abandon(asyncio.get_running_loop())

    async def __aenter__(self) -> "AsyncResults":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    def __del__(self) -> None:
        # Dropped without being finished (async for left by break): wound down on the running loop,
        # or, without one, cancelled and freed here.
        try:
            loop: Optional[asyncio.AbstractEventLoop] = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        self._abandon(loop)


class Client:
    """A connection to fhashd (or, where it cannot be reached and fallback is allowed, the engine in
    this process). One thread at a time; use one Client per thread. busy_notice(reason, gives_up) is
    called once per run when fhashd has answered Busy (a per-user limit) for over a second, unless the
    run has its own; gives_up is True when the run will fail (Busy) after FHASHCTL_BUSY_TIMEOUT seconds."""

    def __init__(self, address: Optional[str] = None, bus: str = "system", local: bool = False,
                 fallback: bool = True, direct: bool = True, busy_notice: Optional[BusyCallback] = None):
        self._handle: Optional[ctypes.c_void_p] = None
        self._runs: Set[Union[Run, _Run]] = set()
        self._current: Optional[_Run] = None
        self._busy_notice = busy_notice
        self._busy_fn = _capi.BusyFn(self._on_busy)
        opts = _capi.ClientOptions(_capi.BUS_ADDRESS if address else _BUS[bus], address.encode() if address else None,
                                   (_capi.CLIENT_LOCAL if local else 0) |
                                   (0 if fallback or local else _capi.CLIENT_NO_FALLBACK) |
                                   (0 if direct else _capi.CLIENT_NO_DIRECT), self._busy_fn)
        handle, err = ctypes.c_void_p(), _capi.Error()
        if _lib.fhash_client_new(ctypes.byref(opts), ctypes.byref(handle), ctypes.byref(err)) < 0:
            raise _error(err)
        self._handle = handle

    def _on_busy(self, reason: Optional[bytes], gives_up: int, _: Any) -> None:
        run = self._current
        fn = (run.options.busy_notice if run and run.options.busy_notice else None) or self._busy_notice
        if fn is None:
            return
        try:
            fn((reason or b"").decode(errors="replace"), bool(gives_up))
        except BaseException as e:  # noqa: B902 - raised by process(), out of libfhash's call
            if run:
                run.callback_error = e

    @property
    def uses_daemon(self) -> bool:
        """True when files go to fhashd, False when they are hashed in this process."""
        return bool(_lib.fhash_client_uses_daemon(self._check()))

    @property
    def fallback_reason(self) -> Optional[str]:
        """Why files are hashed in this process although local=True was not asked: what reaching fhashd
        said, naming the bus and its socket; None otherwise."""
        why = _lib.fhash_client_get_fallback_reason(self._check())
        return why.decode(errors="replace") if why else None

    def _check(self) -> ctypes.c_void_p:
        if not self._handle:
            raise ValueError("the client is closed")
        return self._handle

    def results(self, inputs: Iterable[Item], algo: str = "sha256", dontcache: bool = False,
                unordered: bool = False, max_size: int = 0, *, on_result: Optional[ResultCallback] = None,
                on_progress: Optional[ProgressCallback] = None,
                busy_notice: Optional[BusyCallback] = None, priority: str = "normal") -> Iterator[Result]:
        """A generator: hashes paths, open files (ints or objects with fileno(), read from their start
        and left open), (path_or_file, expected_hex) pairs or Inputs, pulled from the iterable as the
        run has room, and yields each Result as soon as it is known, in order (or as files complete
        with unordered=True). Nothing is held but what is in flight, so an iterable of millions of
        files is fine. algo may join up to four algorithms with ',' (each file is read once); digests
        are then joined by ',' too. A file past max_size bytes (0: no limit) gets EFBIG. on_result
        gets each Result just before it is yielded; on_progress(files_done, files_total, bytes_done,
        bytes_total) whenever the run has moved. Leaving the loop early cancels the files in flight
        and pulls nothing more from the iterable. What the iterable raises ends the run with an Error
        whose __cause__ it is. priority: see the module's documentation."""
        return self._iterate(_Run(self, inputs, _Options(algo, dontcache, unordered, max_size, on_result,
                                                          on_progress, busy_notice, priority)))

    @staticmethod
    def _iterate(run: _Run) -> Iterator[Result]:
        done = False
        try:
            while True:
                going = run.process()
                while run.pending:
                    r = run.pending.popleft()
                    if run.options.on_result:
                        run.options.on_result(r)
                    yield r
                if not going:
                    done = True
                    return
                _wait(run)
        finally:
            if done:
                run.close()
            else:  # the caller stopped early, or an error: pull no more, end fhashd's jobs
                run.wind_down()

    def hash(self, paths_or_files: Iterable[Item], algo: str = "sha256",
             expected: Optional[Sequence[Optional[str]]] = None, dontcache: bool = False, max_size: int = 0, *,
             unordered: bool = False, on_result: Optional[ResultCallback] = None,
             on_progress: Optional[ProgressCallback] = None,
             busy_notice: Optional[BusyCallback] = None, priority: str = "normal") -> List[Result]:
        """Hashes the files (blocking) and returns a Result per file, in order: anything results()
        takes, and expected digests, one per file (None: none). results() is the same as a
        generator, hash_async() on asyncio."""
        return list(self.results(_with_expected(paths_or_files, expected), algo, dontcache, unordered, max_size,
                                 on_result=on_result, on_progress=on_progress, busy_notice=busy_notice,
                                 priority=priority))

    def hash_files(self, files: Iterable[FileLike], names: Optional[Sequence[Optional[str]]] = None,
                   algo: str = "sha256", expected: Optional[Sequence[Optional[str]]] = None,
                   dontcache: bool = False, max_size: int = 0, *, unordered: bool = False,
                   on_result: Optional[ResultCallback] = None, on_progress: Optional[ProgressCallback] = None,
                   busy_notice: Optional[BusyCallback] = None, priority: str = "normal") -> List[Result]:
        """hash() for open files: ints or objects with fileno(), each named by names (None: "").
        Each is read from its start (a pipe from where it is); the files stay open and a regular
        file's offset is left as it was."""
        files = list(files)
        if names is not None and len(names) != len(files):
            raise InvalidArgs(_errno.EINVAL, None, f"{len(names)} names for {len(files)} files")
        if expected is not None and len(expected) != len(files):
            raise InvalidArgs(_errno.EINVAL, None, f"{len(expected)} expected digests for {len(files)} files")
        items = [Input(file=f, name=names[i] if names else None, expected=expected[i] if expected else None)
                 for i, f in enumerate(files)]
        return self.hash(items, algo, None, dontcache, max_size, unordered=unordered, on_result=on_result,
                         on_progress=on_progress, busy_notice=busy_notice, priority=priority)

    def hash_stream(self, inputs: Iterable[Item], algo: str = "sha256", dontcache: bool = False,
                    on_result: Optional[ResultCallback] = None, unordered: bool = False, max_size: int = 0, *,
                    on_progress: Optional[ProgressCallback] = None,
                    busy_notice: Optional[BusyCallback] = None, priority: str = "normal") -> List[Result]:
        """hash() over an iterable consumed as the run has room (a walk can go on while the first
        files are hashed); on_result gets each Result as soon as it is known, while the iterable is
        still being read; the list of all comes back at the end."""
        return self.hash(inputs, algo, None, dontcache, max_size, unordered=unordered, on_result=on_result,
                         on_progress=on_progress, busy_notice=busy_notice, priority=priority)

    def aresults(self, inputs: Iterable[Item], algo: str = "sha256", dontcache: bool = False,
                 unordered: bool = False, max_size: int = 0, *, on_result: Optional[ResultCallback] = None,
                 on_progress: Optional[ProgressCallback] = None,
                 busy_notice: Optional[BusyCallback] = None, priority: str = "normal") -> AsyncResults:
        """results() on the running asyncio loop, as an async iterator:

            async for r in client.aresults(paths): ...

        libfhash's run is driven from the loop's own fd watching (no thread), one non-blocking step at
        a time. Cancelling the task (or leaving the loop) stops the run at once: CancelledError goes
        on, and the run's files are cancelled on the loop in the background. The iterable is read on
        the loop, between its other callbacks: it should not block."""
        return AsyncResults(_Run(self, inputs, _Options(algo, dontcache, unordered, max_size, on_result,
                                                         on_progress, busy_notice, priority)))

    async def hash_async(self, paths_or_files: Iterable[Item], algo: str = "sha256",
                         expected: Optional[Sequence[Optional[str]]] = None, dontcache: bool = False,
                         on_progress: Optional[ProgressCallback] = None, *, unordered: bool = False,
                         max_size: int = 0, on_result: Optional[ResultCallback] = None,
                         busy_notice: Optional[BusyCallback] = None, priority: str = "normal") -> List[Result]:
        """hash() on the running asyncio loop (aresults() collected): on_progress, if given, is called as
        on_progress(files_done, files_total, bytes_done, bytes_total) whenever the run has moved.
        Cancelling the task stops the run at once and raises CancelledError (see aresults())."""
        out: List[Result] = []
        async with self.aresults(_with_expected(paths_or_files, expected), algo, dontcache, unordered, max_size,
                                 on_result=on_result, on_progress=on_progress, busy_notice=busy_notice,
                                 priority=priority) as results:
            async for r in results:
                out.append(r)
        return out

    def start(self, paths: Iterable[PathLike], algo: str = "sha256",
              expected: Optional[Sequence[Optional[str]]] = None, dontcache: bool = False, *,
              priority: str = "normal") -> Run:
        """Starts hashing without waiting: a Run for the caller's own event loop (poll run.fd for
        run.events until run.timeout, then run.process())."""
        return Run(self, paths, algo, expected, dontcache, priority)

    def close(self) -> None:
        """Closes the connection; runs not finished are abandoned first (fhashd cancels their jobs)."""
        for run in list(self._runs):
            if isinstance(run, _Run):
                run.stop()
            run.close()
        if self._handle:
            _lib.fhash_client_free(self._handle)
            self._handle = None

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()


def algorithms() -> List[str]:
    """The algorithm names libfhash and fhashd know, in the order of fhashd's Algorithms property."""
    names, arr, i = [], _lib.fhash_algorithms(), 0
    while arr[i]:
        names.append(arr[i].decode())
        i += 1
    return names


def version() -> str:
    return (_lib.fhash_version() or b"").decode()
