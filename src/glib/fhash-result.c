/* SPDX-License-Identifier: MIT */
/* fhash-result.c: FhashResult, a copy of libfhash's fhash_result that outlives its callback */
#include <errno.h>

#include "glib/fhash-error-private.h"
#include "glib/fhash-result-private.h"

struct _FhashResult {
        gatomicrefcount ref;
        guint64 index;
        guint64 size;
        FhashStatus status;
        gchar *name;
        gchar *digest;
        gchar *skip;
        gchar *algorithm;
        gchar *expected;
        GError *error;
};

G_DEFINE_BOXED_TYPE(FhashResult, fhash_result, fhash_result_ref, fhash_result_unref)

/* libfhash's statuses, one for one (fhash.h): a status added there is FHASH_STATUS_ERROR here until
 * this table learns it. */
static const FhashStatus statuses[] = {
        [FHASH_OK] = FHASH_STATUS_OK,           [FHASH_MISMATCH] = FHASH_STATUS_MISMATCH,
        [FHASH_CHANGED] = FHASH_STATUS_CHANGED, [FHASH_ERROR] = FHASH_STATUS_ERROR,
        [FHASH_CANCELLED] = FHASH_STATUS_CANCELLED, [FHASH_SKIPPED] = FHASH_STATUS_SKIPPED,
};

FhashResult *result_new_from_core(const fhash_result *r)
{
        FhashResult *res = g_new0(FhashResult, 1);

        g_atomic_ref_count_init(&res->ref);
        res->index = r->index;
        res->size = r->size;
        res->status = (unsigned)r->status < G_N_ELEMENTS(statuses) ? statuses[r->status] : FHASH_STATUS_ERROR;
        res->name = g_strdup(r->name ? r->name : "");
        res->digest = g_strdup(r->digest);
        res->skip = g_strdup(r->skip);
        res->algorithm = g_strdup(r->algorithm);
        res->expected = g_strdup(r->expected);
        /* Every status but OK and SKIPPED says why there is no (good) digest: MISMATCH, CHANGED and
         * CANCELLED through their own errno (fhash.h), ERROR through the file's. */
        if (res->status != FHASH_STATUS_OK && res->status != FHASH_STATUS_SKIPPED)
                res->error = g_error_new_literal(FHASH_CLIENT_ERROR,
                                                 (gint)error_code_from_errno(r->error ? r->error : -EIO),
                                                 r->message ? r->message : g_strerror(r->error ? -r->error : EIO));
        return res;
}

/**
 * fhash_result_ref:
 * @result: a result
 *
 * Returns: (transfer full): @result, with one more reference
 */
FhashResult *fhash_result_ref(FhashResult *result)
{
        g_return_val_if_fail(result, NULL);
        g_atomic_ref_count_inc(&result->ref);
        return result;
}

/**
 * fhash_result_unref:
 * @result: (transfer full): a result
 *
 * Drops a reference; the last frees it.
 */
void fhash_result_unref(FhashResult *result)
{
        g_return_if_fail(result);
        if (!g_atomic_ref_count_dec(&result->ref))
                return;
        g_free(result->name);
        g_free(result->digest);
        g_free(result->skip);
        g_free(result->algorithm);
        g_free(result->expected);
        g_clear_error(&result->error);
        g_free(result);
}

/**
 * fhash_result_get_index:
 * @result: a result
 *
 * Returns: the file's position among the run's inputs, from 0
 */
guint64 fhash_result_get_index(FhashResult *result)
{
        g_return_val_if_fail(result, 0);
        return result->index;
}

/**
 * fhash_result_get_name:
 * @result: a result
 *
 * Returns: (type filename): the path as given, or the name given with an open file ("" without one)
 */
const gchar *fhash_result_get_name(FhashResult *result)
{
        g_return_val_if_fail(result, NULL);
        return result->name;
}

/**
 * fhash_result_get_size:
 * @result: a result
 *
 * Returns: the bytes hashed
 */
guint64 fhash_result_get_size(FhashResult *result)
{
        g_return_val_if_fail(result, 0);
        return result->size;
}

/**
 * fhash_result_get_digest:
 * @result: a result
 *
 * Returns: (nullable): the digest in lower-case hex (with several algorithms, theirs joined by ','),
 *   with %FHASH_STATUS_OK and %FHASH_STATUS_MISMATCH; %NULL otherwise
 */
const gchar *fhash_result_get_digest(FhashResult *result)
{
        g_return_val_if_fail(result, NULL);
        return result->digest;
}

/**
 * fhash_result_get_status:
 * @result: a result
 *
 * Returns: what became of the file
 */
FhashStatus fhash_result_get_status(FhashResult *result)
{
        g_return_val_if_fail(result, FHASH_STATUS_ERROR);
        return result->status;
}

/**
 * fhash_result_get_error:
 * @result: a result
 *
 * Why the file has no digest, or not the expected one: a #GError of %FHASH_CLIENT_ERROR
 * (%FHASH_CLIENT_ERROR_NOT_FOUND for a missing file, ..._MISMATCH, ..._CHANGED, ..._CANCELLED)
 * whose message says it in fhashd's words.
 *
 * Returns: (transfer none) (nullable): the error, or %NULL with %FHASH_STATUS_OK and
 *   %FHASH_STATUS_SKIPPED
 */
const GError *fhash_result_get_error(FhashResult *result)
{
        g_return_val_if_fail(result, NULL);
        return result->error;
}

/**
 * fhash_result_propagate_error:
 * @result: a result
 * @error: where to copy the result's error
 *
 * The result's error, as a call that fails gives it (bindings raise it).
 *
 * Returns: %TRUE when the file has no error (%FHASH_STATUS_OK or %FHASH_STATUS_SKIPPED)
 */
gboolean fhash_result_propagate_error(FhashResult *result, GError **error)
{
        g_return_val_if_fail(result, FALSE);
        if (!result->error)
                return TRUE;
        g_propagate_error(error, g_error_copy(result->error));
        return FALSE;
}

/**
 * fhash_result_get_skip:
 * @result: a result
 *
 * Returns: (nullable): with %FHASH_STATUS_SKIPPED, the reason the input was given with
 */
const gchar *fhash_result_get_skip(FhashResult *result)
{
        g_return_val_if_fail(result, NULL);
        return result->skip;
}

/**
 * fhash_result_get_algorithm:
 * @result: a result
 *
 * Returns: (nullable): the algorithm the file was hashed with (several joined by ',')
 */
const gchar *fhash_result_get_algorithm(FhashResult *result)
{
        g_return_val_if_fail(result, NULL);
        return result->algorithm;
}

/**
 * fhash_result_get_expected:
 * @result: a result
 *
 * Returns: (nullable): the expected digest the file was compared with
 */
const gchar *fhash_result_get_expected(FhashResult *result)
{
        g_return_val_if_fail(result, NULL);
        return result->expected;
}
