/* SPDX-License-Identifier: MIT */
/* fhash-client.h: FhashClient, fhashd (or libfhash's in-process engine) on a GMainContext */
#pragma once

#if !defined(__FHASH_GLIB_INSIDE__) && !defined(FHASH_GLIB_COMPILATION)
#error "Only <fhash-glib.h> can be included directly."
#endif

#include <gio/gio.h>

#include "fhash-input.h"

G_BEGIN_DECLS

/**
 * FhashBusType:
 * @FHASH_BUS_TYPE_SYSTEM: fhashd on the system bus (the default)
 * @FHASH_BUS_TYPE_USER: fhashd on the user's session bus
 *
 * Where a client looks for fhashd, unless it was given an address (#FhashClient:address).
 */
typedef enum {
        FHASH_BUS_TYPE_SYSTEM,
        FHASH_BUS_TYPE_USER,
} FhashBusType;

/**
 * FhashClientFlags:
 * @FHASH_CLIENT_FLAGS_NONE: through fhashd where it can be reached, else in this process
 * @FHASH_CLIENT_FLAGS_LOCAL: never fhashd: hash in this process
 * @FHASH_CLIENT_FLAGS_NO_FALLBACK: fail with %FHASH_CLIENT_ERROR_NOT_REACHABLE rather than hash
 *   in this process
 * @FHASH_CLIENT_FLAGS_NO_DIRECT: pass files through the bus, not a direct connection to fhashd
 *
 * How a client connects.
 */
typedef enum /*< flags >*/ {
        FHASH_CLIENT_FLAGS_NONE = 0,
        FHASH_CLIENT_FLAGS_LOCAL = 1 << 0,
        FHASH_CLIENT_FLAGS_NO_FALLBACK = 1 << 1,
        FHASH_CLIENT_FLAGS_NO_DIRECT = 1 << 2,
} FhashClientFlags;

/**
 * FhashHashFlags:
 * @FHASH_HASH_FLAGS_NONE: in the order given, the page cache used as usual
 * @FHASH_HASH_FLAGS_DONTCACHE: add nothing to the page cache, evict nothing
 * @FHASH_HASH_FLAGS_PROGRESS: count the bytes of the files being hashed in the progress too, not
 *   only of those done (through fhashd: its jobs' progress, watched on the bus)
 * @FHASH_HASH_FLAGS_UNORDERED: results as files complete, not in the order given
 *   (fhash_result_get_index() says which): a slow file does not hold back the others
 * @FHASH_HASH_FLAGS_RESUME: through fhashd, survive it going away (a crash, a restart, an upgrade):
 *   connect again, which activates the next fhashd, and send it exactly the inputs without a
 *   result, or go on in this process unless %FHASH_CLIENT_FLAGS_NO_FALLBACK; without it such a run
 *   fails with %FHASH_CLIENT_ERROR_GONE (libfhash's FHASH_HASH_RESUME, libfhash(3))
 *
 * How the runs of a client hash (#FhashClient:hash-flags).
 */
typedef enum /*< flags >*/ {
        FHASH_HASH_FLAGS_NONE = 0,
        FHASH_HASH_FLAGS_DONTCACHE = 1 << 0,
        FHASH_HASH_FLAGS_PROGRESS = 1 << 1,
        FHASH_HASH_FLAGS_UNORDERED = 1 << 2,
        FHASH_HASH_FLAGS_RESUME = 1 << 3,
} FhashHashFlags;

#define FHASH_TYPE_CLIENT (fhash_client_get_type())
G_DECLARE_FINAL_TYPE(FhashClient, fhash_client, FHASH, CLIENT, GObject)

FhashClient *fhash_client_new_for_bus(FhashBusType bus_type, FhashClientFlags flags);
FhashClient *fhash_client_new_for_address(const gchar *address, FhashClientFlags flags);

void fhash_client_connect_async(FhashClient *self, GCancellable *cancellable, GAsyncReadyCallback callback,
                                gpointer user_data);
gboolean fhash_client_connect_finish(FhashClient *self, GAsyncResult *result, GError **error);

void fhash_client_hash_async(FhashClient *self, const gchar *const *paths, GCancellable *cancellable,
                             GAsyncReadyCallback callback, gpointer user_data);
GPtrArray *fhash_client_hash_finish(FhashClient *self, GAsyncResult *result, GError **error);
void fhash_client_hash_fds_async(FhashClient *self, const gint *fds, guint n_fds, const gchar *const *names,
                                 GCancellable *cancellable, GAsyncReadyCallback callback, gpointer user_data);
GPtrArray *fhash_client_hash_fds_finish(FhashClient *self, GAsyncResult *result, GError **error);
void fhash_client_hash_source_async(FhashClient *self, FhashSourceFunc source, gpointer source_data,
                                    GDestroyNotify source_destroy, GCancellable *cancellable,
                                    GAsyncReadyCallback callback, gpointer user_data);
gboolean fhash_client_hash_source_finish(FhashClient *self, GAsyncResult *result, GError **error);

FhashBusType fhash_client_get_bus_type(FhashClient *self);
const gchar *fhash_client_get_address(FhashClient *self);
FhashClientFlags fhash_client_get_flags(FhashClient *self);
const gchar *fhash_client_get_algorithm(FhashClient *self);
void fhash_client_set_algorithm(FhashClient *self, const gchar *algorithm);
FhashHashFlags fhash_client_get_hash_flags(FhashClient *self);
void fhash_client_set_hash_flags(FhashClient *self, FhashHashFlags flags);
guint64 fhash_client_get_max_size(FhashClient *self);
void fhash_client_set_max_size(FhashClient *self, guint64 max_size);
gboolean fhash_client_get_uses_daemon(FhashClient *self);
gchar *fhash_client_dup_fallback_reason(FhashClient *self);
void fhash_client_get_progress(FhashClient *self, guint64 *files_done, guint64 *files_total, guint64 *bytes_done,
                               guint64 *bytes_total);

const gchar *const *fhash_client_list_algorithms(void);

G_END_DECLS
