/* SPDX-License-Identifier: MIT */
/* fhash-input.h: FhashInput, one input of a streamed run (fhash_client_hash_source_async()) */
#pragma once

#if !defined(__FHASH_GLIB_INSIDE__) && !defined(FHASH_GLIB_COMPILATION)
#error "Only <fhash-glib.h> can be included directly."
#endif

#include <glib-object.h>

G_BEGIN_DECLS

#define FHASH_TYPE_INPUT (fhash_input_get_type())

/**
 * FhashInput:
 *
 * One input of a streamed run: a path, or an open file, with what its result should say (a name,
 * an expected digest, its own algorithm, a reason to skip it). Reference counted; not to be changed
 * once given to a run.
 */
typedef struct _FhashInput FhashInput;

/**
 * FhashSourceFunc:
 * @user_data: (closure): the data given with the function
 *
 * Gives a streamed run its next input, called from the run's #GMainContext as the run has room for
 * more (a directory walk goes on while the first files are hashed). It should not block.
 *
 * Returns: (transfer full) (nullable): the next input, or %NULL when there are no more
 */
typedef FhashInput *(*FhashSourceFunc)(gpointer user_data);

GType fhash_input_get_type(void) G_GNUC_CONST;
FhashInput *fhash_input_new_for_path(const gchar *path);
FhashInput *fhash_input_new_for_fd(gint fd, const gchar *name, GError **error);
FhashInput *fhash_input_ref(FhashInput *input);
void fhash_input_unref(FhashInput *input);

void fhash_input_set_name(FhashInput *input, const gchar *name);
void fhash_input_set_expected(FhashInput *input, const gchar *expected);
void fhash_input_set_algorithm(FhashInput *input, const gchar *algorithm);
void fhash_input_set_skip(FhashInput *input, const gchar *reason);
const gchar *fhash_input_get_path(FhashInput *input);
const gchar *fhash_input_get_name(FhashInput *input);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(FhashInput, fhash_input_unref)

G_END_DECLS
