/* SPDX-License-Identifier: MIT */
/* fhash-error.c: the FHASH_CLIENT_ERROR domain, and libfhash's errors (errno, D-Bus name) as its codes */
#include <errno.h>
#include <gio/gio.h>
#include <string.h>

#include "fhash/fhash-dbus.h"
#include "glib/fhash-error-private.h"

/* fhashd's own error names, registered with GDBus under their codes. The freedesktop.org names
 * (AccessDenied, InvalidArgs, ...) are GDBus's own (G_DBUS_ERROR) and cannot be registered twice:
 * those are mapped by error_names below only. */
static const GDBusErrorEntry dbus_entries[] = {
        { FHASH_CLIENT_ERROR_NOT_FOUND, FHASH_ERROR_NOT_FOUND },
        { FHASH_CLIENT_ERROR_ACCESS_DENIED, FHASH_ERROR_ACCESS_DENIED },
        { FHASH_CLIENT_ERROR_IO, FHASH_ERROR_IO },
        { FHASH_CLIENT_ERROR_CHANGED, FHASH_ERROR_CHANGED },
        { FHASH_CLIENT_ERROR_NOT_REGULAR, FHASH_ERROR_NOT_REGULAR },
        { FHASH_CLIENT_ERROR_MISMATCH, FHASH_ERROR_MISMATCH },
        { FHASH_CLIENT_ERROR_CANCELLED, FHASH_ERROR_CANCELLED },
        { FHASH_CLIENT_ERROR_BUSY, FHASH_ERROR_BUSY },
        { FHASH_CLIENT_ERROR_TOO_LARGE, FHASH_ERROR_TOO_LARGE },
        { FHASH_CLIENT_ERROR_TIMED_OUT, FHASH_ERROR_TIMED_OUT },
        { FHASH_CLIENT_ERROR_JOB_CLOSED, FHASH_ERROR_JOB_CLOSED },
        { FHASH_CLIENT_ERROR_GONE, FHASH_ERROR_PREFIX "Gone" },
};

/* Every other name a run's error may carry: what fhashd answers besides its own names (bus-args.c,
 * bus-job.c, bus-manager.c, bus-options.c), and what the bus says when fhashd is not there. */
static const struct {
        const char *name;
        FhashClientError code;
} error_names[] = {
        { "org.freedesktop.DBus.Error.AccessDenied", FHASH_CLIENT_ERROR_ACCESS_DENIED },
        { "org.freedesktop.DBus.Error.AuthFailed", FHASH_CLIENT_ERROR_ACCESS_DENIED },
        { "org.freedesktop.DBus.Error.InvalidArgs", FHASH_CLIENT_ERROR_INVALID_ARGS },
        { "org.freedesktop.DBus.Error.InconsistentMessage", FHASH_CLIENT_ERROR_INVALID_ARGS },
        { "org.freedesktop.DBus.Error.LimitsExceeded", FHASH_CLIENT_ERROR_LIMITS_EXCEEDED },
        { "org.freedesktop.DBus.Error.NotSupported", FHASH_CLIENT_ERROR_NOT_SUPPORTED },
        { "org.freedesktop.DBus.Error.Failed", FHASH_CLIENT_ERROR_FAILED },
        { "org.freedesktop.DBus.Error.NoMemory", FHASH_CLIENT_ERROR_FAILED },
        { "org.freedesktop.DBus.Error.NoReply", FHASH_CLIENT_ERROR_TIMED_OUT },
        { "org.freedesktop.DBus.Error.Timeout", FHASH_CLIENT_ERROR_TIMED_OUT },
        { "org.freedesktop.DBus.Error.Disconnected", FHASH_CLIENT_ERROR_GONE },
        { "org.freedesktop.DBus.Error.ServiceUnknown", FHASH_CLIENT_ERROR_NOT_REACHABLE },
        { "org.freedesktop.DBus.Error.NameHasNoOwner", FHASH_CLIENT_ERROR_NOT_REACHABLE },
        { "org.freedesktop.DBus.Error.NoServer", FHASH_CLIENT_ERROR_NOT_REACHABLE },
        { "org.freedesktop.DBus.Error.Spawn.ServiceNotFound", FHASH_CLIENT_ERROR_NOT_REACHABLE },
        { "org.freedesktop.DBus.Error.Spawn.ChildExited", FHASH_CLIENT_ERROR_NOT_REACHABLE },
        { "org.freedesktop.systemd1.NoSuchUnit", FHASH_CLIENT_ERROR_NOT_REACHABLE },
};

/* A -errno without a name: libfhash's own failures (in-process, or before fhashd said anything),
 * and the errno of a file's result as fhashd's names class it (fhash.h, fhash_result.error). */
static const struct {
        int error;
        FhashClientError code;
} error_errnos[] = {
        { ENOTCONN, FHASH_CLIENT_ERROR_NOT_REACHABLE },  { ECONNREFUSED, FHASH_CLIENT_ERROR_NOT_REACHABLE },
        { ECONNRESET, FHASH_CLIENT_ERROR_GONE },         { EPIPE, FHASH_CLIENT_ERROR_GONE },
        { EBUSY, FHASH_CLIENT_ERROR_BUSY },              { EACCES, FHASH_CLIENT_ERROR_ACCESS_DENIED },
        { EPERM, FHASH_CLIENT_ERROR_ACCESS_DENIED },     { EINVAL, FHASH_CLIENT_ERROR_INVALID_ARGS },
        { E2BIG, FHASH_CLIENT_ERROR_LIMITS_EXCEEDED },   { EOPNOTSUPP, FHASH_CLIENT_ERROR_NOT_SUPPORTED },
        { ENOENT, FHASH_CLIENT_ERROR_NOT_FOUND },        { ENOTDIR, FHASH_CLIENT_ERROR_NOT_FOUND },
        { ENXIO, FHASH_CLIENT_ERROR_NOT_FOUND },         { ENODEV, FHASH_CLIENT_ERROR_NOT_FOUND },
        { EIO, FHASH_CLIENT_ERROR_IO },                  { EISDIR, FHASH_CLIENT_ERROR_NOT_REGULAR },
        { ESPIPE, FHASH_CLIENT_ERROR_NOT_REGULAR },      { EFBIG, FHASH_CLIENT_ERROR_TOO_LARGE },
        { ETIMEDOUT, FHASH_CLIENT_ERROR_TIMED_OUT },     { ESTALE, FHASH_CLIENT_ERROR_CHANGED },
        { EBADMSG, FHASH_CLIENT_ERROR_MISMATCH },        { ECANCELED, FHASH_CLIENT_ERROR_CANCELLED },
};

GQuark fhash_client_error_quark(void)
{
        static gsize quark = 0;

        g_dbus_error_register_error_domain("fhash-client-error-quark", &quark, dbus_entries,
                                           G_N_ELEMENTS(dbus_entries));
        return (GQuark)quark;
}

FhashClientError error_code_from_name(const char *name)
{
        if (!name || !*name)
                return FHASH_CLIENT_ERROR_FAILED;
        for (gsize i = 0; i < G_N_ELEMENTS(dbus_entries); i++)
                if (strcmp(dbus_entries[i].dbus_error_name, name) == 0)
                        return (FhashClientError)dbus_entries[i].error_code;
        for (gsize i = 0; i < G_N_ELEMENTS(error_names); i++)
                if (strcmp(error_names[i].name, name) == 0)
                        return error_names[i].code;
        return FHASH_CLIENT_ERROR_FAILED;
}

FhashClientError error_code_from_errno(int error)
{
        int e = error < 0 ? -error : error;

        for (gsize i = 0; i < G_N_ELEMENTS(error_errnos); i++)
                if (error_errnos[i].error == e)
                        return error_errnos[i].code;
        return FHASH_CLIENT_ERROR_FAILED;
}

GError *error_from_core(const fhash_error *e)
{
        FhashClientError code = error_code_from_name(e->name);

        /* A name fhashd did not send (sd-bus's own for an errno, or none) says less than the errno. */
        if (code == FHASH_CLIENT_ERROR_FAILED)
                code = error_code_from_errno(e->error);
        return g_error_new_literal(FHASH_CLIENT_ERROR, (gint)code,
                                   e->message[0] ? e->message : g_strerror(e->error < 0 ? -e->error : EIO));
}
