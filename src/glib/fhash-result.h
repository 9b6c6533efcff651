/* SPDX-License-Identifier: MIT */
/* fhash-result.h: FhashResult, what became of one file */
#pragma once

#if !defined(__FHASH_GLIB_INSIDE__) && !defined(FHASH_GLIB_COMPILATION)
#error "Only <fhash-glib.h> can be included directly."
#endif

#include <glib-object.h>

G_BEGIN_DECLS

/**
 * FhashStatus:
 * @FHASH_STATUS_OK: hashed: the digest is there (equal to the expected one, if one was given)
 * @FHASH_STATUS_MISMATCH: hashed, but not the expected digest: the digest is the one computed
 * @FHASH_STATUS_CHANGED: the file changed while it was read: no digest
 * @FHASH_STATUS_ERROR: it could not be opened or read: fhash_result_get_error() says why
 * @FHASH_STATUS_CANCELLED: the run was cancelled before the file was hashed
 * @FHASH_STATUS_SKIPPED: an input given with a skip reason (fhash_input_set_skip()): not hashed
 *
 * What became of one file: the same through fhashd and in-process.
 */
typedef enum {
        FHASH_STATUS_OK,
        FHASH_STATUS_MISMATCH,
        FHASH_STATUS_CHANGED,
        FHASH_STATUS_ERROR,
        FHASH_STATUS_CANCELLED,
        FHASH_STATUS_SKIPPED,
} FhashStatus;

#define FHASH_TYPE_RESULT (fhash_result_get_type())

/**
 * FhashResult:
 *
 * One file's result: its index among the run's inputs, its name, size and digest, or why there is
 * none. Immutable; reference counted.
 */
typedef struct _FhashResult FhashResult;

GType fhash_result_get_type(void) G_GNUC_CONST;
FhashResult *fhash_result_ref(FhashResult *result);
void fhash_result_unref(FhashResult *result);

guint64 fhash_result_get_index(FhashResult *result);
const gchar *fhash_result_get_name(FhashResult *result);
guint64 fhash_result_get_size(FhashResult *result);
const gchar *fhash_result_get_digest(FhashResult *result);
FhashStatus fhash_result_get_status(FhashResult *result);
const GError *fhash_result_get_error(FhashResult *result);
gboolean fhash_result_propagate_error(FhashResult *result, GError **error);
const gchar *fhash_result_get_skip(FhashResult *result);
const gchar *fhash_result_get_algorithm(FhashResult *result);
const gchar *fhash_result_get_expected(FhashResult *result);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(FhashResult, fhash_result_unref)

G_END_DECLS
