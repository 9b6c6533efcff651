/* SPDX-License-Identifier: MIT */
/* fhash-error.h: the FHASH_CLIENT_ERROR GError domain: every error fhashd and libfhash report */
#pragma once

#if !defined(__FHASH_GLIB_INSIDE__) && !defined(FHASH_GLIB_COMPILATION)
#error "Only <fhash-glib.h> can be included directly."
#endif

#include <glib.h>

G_BEGIN_DECLS

/**
 * FHASH_CLIENT_ERROR:
 *
 * The error domain of libfhash-glib: the errors of a run (#FhashClientError) and those of single
 * files (fhash_result_get_error()). Its D-Bus error names (org.fhash.Hasher1.Error.*) are registered
 * with GDBus, so that g_dbus_error_strip_remote_error() and GDBus proxies of fhashd's interface give
 * the same codes. (Not FHASH_ERROR: libfhash's C header has a status of that name.)
 */
#define FHASH_CLIENT_ERROR (fhash_client_error_quark())

/**
 * FhashClientError:
 * @FHASH_CLIENT_ERROR_FAILED: anything else (org.freedesktop.DBus.Error.Failed, out of memory)
 * @FHASH_CLIENT_ERROR_NOT_REACHABLE: no fhashd on the bus, or no bus at its address (the message
 *   names the socket), and the client may not hash in-process (%FHASH_CLIENT_FLAGS_NO_FALLBACK)
 * @FHASH_CLIENT_ERROR_GONE: fhashd went away during the run (it exited, crashed or was restarted;
 *   org.fhash.Hasher1.Error.Gone); the next run connects again
 * @FHASH_CLIENT_ERROR_BUSY: a per-user limit of fhashd for longer than FHASHCTL_BUSY_TIMEOUT
 *   allows (org.fhash.Hasher1.Error.Busy)
 * @FHASH_CLIENT_ERROR_ACCESS_DENIED: the bus or fhashd refused the caller
 *   (org.freedesktop.DBus.Error.AccessDenied), or a file could not be opened
 *   (org.fhash.Hasher1.Error.AccessDenied)
 * @FHASH_CLIENT_ERROR_INVALID_ARGS: bad options: an unknown algorithm, an expected digest of the
 *   wrong form (org.freedesktop.DBus.Error.InvalidArgs)
 * @FHASH_CLIENT_ERROR_LIMITS_EXCEEDED: more than fhashd takes in one job
 *   (org.freedesktop.DBus.Error.LimitsExceeded)
 * @FHASH_CLIENT_ERROR_NOT_SUPPORTED: fhashd cannot do what was asked here
 *   (org.freedesktop.DBus.Error.NotSupported)
 * @FHASH_CLIENT_ERROR_NOT_FOUND: a file does not exist (org.fhash.Hasher1.Error.NotFound)
 * @FHASH_CLIENT_ERROR_IO: a file could not be read (org.fhash.Hasher1.Error.IO)
 * @FHASH_CLIENT_ERROR_NOT_REGULAR: a directory, or something else that is not hashed
 *   (org.fhash.Hasher1.Error.NotRegular)
 * @FHASH_CLIENT_ERROR_TOO_LARGE: a file larger than #FhashClient:max-size
 *   (org.fhash.Hasher1.Error.TooLarge)
 * @FHASH_CLIENT_ERROR_TIMED_OUT: a read took too long (org.fhash.Hasher1.Error.TimedOut)
 * @FHASH_CLIENT_ERROR_CHANGED: a file changed while it was read (org.fhash.Hasher1.Error.Changed)
 * @FHASH_CLIENT_ERROR_MISMATCH: a file's digest is not the expected one
 *   (org.fhash.Hasher1.Error.Mismatch)
 * @FHASH_CLIENT_ERROR_CANCELLED: a file was not hashed because its run or job was cancelled
 *   (org.fhash.Hasher1.Error.Cancelled); a run cancelled through its #GCancellable ends with
 *   %G_IO_ERROR_CANCELLED instead, as GIO's do
 * @FHASH_CLIENT_ERROR_JOB_CLOSED: a job took no more files (org.fhash.Hasher1.Error.JobClosed)
 *
 * The codes of %FHASH_CLIENT_ERROR.
 */
typedef enum {
        FHASH_CLIENT_ERROR_FAILED,
        FHASH_CLIENT_ERROR_NOT_REACHABLE,
        FHASH_CLIENT_ERROR_GONE,
        FHASH_CLIENT_ERROR_BUSY,
        FHASH_CLIENT_ERROR_ACCESS_DENIED,
        FHASH_CLIENT_ERROR_INVALID_ARGS,
        FHASH_CLIENT_ERROR_LIMITS_EXCEEDED,
        FHASH_CLIENT_ERROR_NOT_SUPPORTED,
        FHASH_CLIENT_ERROR_NOT_FOUND,
        FHASH_CLIENT_ERROR_IO,
        FHASH_CLIENT_ERROR_NOT_REGULAR,
        FHASH_CLIENT_ERROR_TOO_LARGE,
        FHASH_CLIENT_ERROR_TIMED_OUT,
        FHASH_CLIENT_ERROR_CHANGED,
        FHASH_CLIENT_ERROR_MISMATCH,
        FHASH_CLIENT_ERROR_CANCELLED,
        FHASH_CLIENT_ERROR_JOB_CLOSED,
} FhashClientError;

GQuark fhash_client_error_quark(void);

G_END_DECLS
