# SPDX-License-Identifier: MIT
"""fhash._capi: libfhash.so.0's C API (include/fhash/fhash.h) through ctypes: the library found and
loaded, its structs field by field (held to the library's own sizes), its functions' prototypes.

ctypes rather than a C extension: libfhash's API is a handful of plain C functions and structs, the
module then needs no compiler and no Python headers to build, and the one wheel (py3-none-any) works
with every Python 3 and every venv, on the libfhash.so.0 of the system.
"""

import ctypes
import os

LIBRARY_ENV = "FHASH_LIBRARY"
SONAME = "libfhash.so.0"


def _load() -> ctypes.CDLL:
    """$FHASH_LIBRARY (a path: a build tree's library), else the system's libfhash.so.0; an
    ImportError saying what to do when neither loads."""
    name = os.environ.get(LIBRARY_ENV) or SONAME
    try:
        return ctypes.CDLL(name)
    except OSError as e:
        where = (f"${LIBRARY_ENV} is {name!r}, which cannot be loaded" if os.environ.get(LIBRARY_ENV) else
                 f"{SONAME}, fhash's C library, is not installed or not where the loader looks")
        raise ImportError(f"fhash: {where} ({e}). Install it (Debian: apt install libfhash0), or set "
                          f"${LIBRARY_ENV} to the path of a libfhash.so.0.", name="fhash") from e


lib = _load()


# The structs of <fhash/fhash.h>, field by field; check_sizes() holds them to the library's own sizes.
class Error(ctypes.Structure):
    _fields_ = [("error", ctypes.c_int), ("name", ctypes.c_char * 128), ("message", ctypes.c_char * 512),
                ("reserved", ctypes.c_uint64 * 4)]


BusyFn = ctypes.CFUNCTYPE(None, ctypes.c_char_p, ctypes.c_int, ctypes.c_void_p)


class ClientOptions(ctypes.Structure):
    _fields_ = [("bus", ctypes.c_int), ("address", ctypes.c_char_p), ("flags", ctypes.c_uint),
                ("busy_notice", BusyFn), ("notice_userdata", ctypes.c_void_p),
                ("reserved", ctypes.c_uint64 * 8)]


class Result(ctypes.Structure):
    _fields_ = [("index", ctypes.c_size_t), ("name", ctypes.c_char_p), ("size", ctypes.c_uint64),
                ("digest", ctypes.c_char_p), ("error", ctypes.c_int), ("message", ctypes.c_char_p),
                ("skip", ctypes.c_char_p), ("status", ctypes.c_int), ("algorithm", ctypes.c_char_p),
                ("expected", ctypes.c_char_p), ("userdata", ctypes.c_void_p), ("reserved", ctypes.c_uint64 * 4)]


class HashOptions(ctypes.Structure):
    _fields_ = [("algorithm", ctypes.c_char_p), ("expected", ctypes.POINTER(ctypes.c_char_p)),
                ("flags", ctypes.c_uint), ("strategy", ctypes.c_char_p), ("length_bits", ctypes.c_uint),
                ("key", ctypes.POINTER(ctypes.c_uint8)), ("derive_key", ctypes.c_char_p),
                ("max_size", ctypes.c_uint64), ("block_size", ctypes.c_uint32), ("reserved_pad", ctypes.c_uint32),
                ("reserved", ctypes.c_uint64 * 7)]


class Progress(ctypes.Structure):
    _fields_ = [("files_done", ctypes.c_size_t), ("files_total", ctypes.c_size_t), ("complete", ctypes.c_int),
                ("bytes_done", ctypes.c_uint64), ("bytes_total", ctypes.c_uint64), ("reserved", ctypes.c_uint64 * 4)]


class Input(ctypes.Structure):
    _fields_ = [("path", ctypes.c_char_p), ("fd", ctypes.c_int), ("name", ctypes.c_char_p),
                ("expected", ctypes.c_char_p), ("algorithm", ctypes.c_char_p), ("length_bits", ctypes.c_uint),
                ("error", ctypes.c_int), ("skip", ctypes.c_char_p), ("userdata", ctypes.c_void_p),
                ("reserved", ctypes.c_uint64 * 4)]


ResultFn = ctypes.CFUNCTYPE(None, ctypes.POINTER(Result), ctypes.c_void_p)
SourceFn = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(Input))

# fhash_client_options.bus and .flags, fhash_hash_options.flags
BUS_SYSTEM, BUS_USER, BUS_ADDRESS = 0, 1, 2
CLIENT_LOCAL, CLIENT_NO_FALLBACK, CLIENT_NO_DIRECT = 1, 2, 4
HASH_DONTCACHE, HASH_PROGRESS, HASH_UNORDERED = 1, 2, 4

_P = ctypes.POINTER
_prototypes = {
    "fhash_client_new": (ctypes.c_int, [_P(ClientOptions), _P(ctypes.c_void_p), _P(Error)]),
    "fhash_client_free": (ctypes.c_void_p, [ctypes.c_void_p]),
    "fhash_client_uses_daemon": (ctypes.c_int, [ctypes.c_void_p]),
    "fhash_client_get_fallback_reason": (ctypes.c_char_p, [ctypes.c_void_p]),
    "fhash_run_paths": (ctypes.c_int, [ctypes.c_void_p, _P(ctypes.c_char_p), ctypes.c_size_t, _P(HashOptions),
                                       ResultFn, ctypes.c_void_p, _P(ctypes.c_void_p), _P(Error)]),
    "fhash_run_source": (ctypes.c_int, [ctypes.c_void_p, SourceFn, ctypes.c_void_p, _P(HashOptions), ResultFn,
                                        ctypes.c_void_p, _P(ctypes.c_void_p), _P(Error)]),
    "fhash_run_get_fd": (ctypes.c_int, [ctypes.c_void_p]),
    "fhash_run_get_events": (ctypes.c_int, [ctypes.c_void_p]),
    "fhash_run_get_timeout": (ctypes.c_uint64, [ctypes.c_void_p]),
    "fhash_run_process": (ctypes.c_int, [ctypes.c_void_p, _P(Error)]),
    "fhash_run_get_progress": (ctypes.c_int, [ctypes.c_void_p, _P(Progress)]),
    "fhash_run_cancel": (ctypes.c_int, [ctypes.c_void_p]),
    "fhash_run_free": (ctypes.c_void_p, [ctypes.c_void_p]),
    "fhash_algorithms": (_P(ctypes.c_char_p), []),
    "fhash_version": (ctypes.c_char_p, []),
    "fhash_status_to_string": (ctypes.c_char_p, [ctypes.c_int]),
    "fhash_struct_size": (ctypes.c_size_t, [ctypes.c_char_p]),
}


def _declare() -> None:
    """The prototypes, and the structs above held to the library's: a library built from another
    header (a field added, an ABI changed) would be misread without a word. Its own sizes must be
    ours, or nothing is called."""
    for name, (restype, argtypes) in _prototypes.items():
        try:
            f = getattr(lib, name)
        except AttributeError:
            raise ImportError(f"fhash: {lib._name} has no {name}(): older than this module "
                              "(LIBFHASH_0.2 or later needed)", name="fhash") from None
        f.restype, f.argtypes = restype, argtypes
    for name, cls in (("fhash_error", Error), ("fhash_client_options", ClientOptions), ("fhash_result", Result),
                      ("fhash_hash_options", HashOptions), ("fhash_progress", Progress), ("fhash_input", Input)):
        theirs = lib.fhash_struct_size(name.encode())
        if theirs != ctypes.sizeof(cls):
            raise ImportError(f"fhash: {name} is {theirs} bytes in {lib._name} but {ctypes.sizeof(cls)} here: "
                              "the module and the library are from different versions", name="fhash")


_declare()
