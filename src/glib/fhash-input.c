/* SPDX-License-Identifier: MIT */
/* fhash-input.c: FhashInput, one input of a streamed run, and what libfhash's source gets of it */
#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>

#include "glib/fhash-error.h"
#include "glib/fhash-input-private.h"

struct _FhashInput {
        gatomicrefcount ref;
        gchar *path;       /* NULL: fd */
        gint fd;           /* ours: a duplicate of the caller's, closed with the input */
        gchar *name;
        gchar *expected;
        gchar *algorithm;
        gchar *skip;
};

G_DEFINE_BOXED_TYPE(FhashInput, fhash_input, fhash_input_ref, fhash_input_unref)

/**
 * fhash_input_new_for_path:
 * @path: (type filename): a path (relative: from the current directory; "-": standard input)
 *
 * Returns: (transfer full): an input that hashes the file at @path
 */
FhashInput *fhash_input_new_for_path(const gchar *path)
{
        FhashInput *in;

        g_return_val_if_fail(path, NULL);
        in = g_new0(FhashInput, 1);
        g_atomic_ref_count_init(&in->ref);
        in->path = g_strdup(path);
        in->fd = -1;
        return in;
}

/**
 * fhash_input_new_for_fd:
 * @fd: an open file, read from its start (a pipe: from where it is)
 * @name: (nullable) (type filename): the result's name ("" when %NULL)
 * @error: where a failure to duplicate @fd goes
 *
 * The input holds a duplicate of @fd, closed when the input goes: the caller may close its own at
 * once. Its offset is shared with @fd, but a regular file is read with pread(), which moves none.
 *
 * Returns: (transfer full) (nullable): an input that hashes the open file, or %NULL with @error set
 */
FhashInput *fhash_input_new_for_fd(gint fd, const gchar *name, GError **error)
{
        FhashInput *in;
        int copy;

        g_return_val_if_fail(error == NULL || *error == NULL, NULL);
        copy = fd < 0 ? -1 : fcntl(fd, F_DUPFD_CLOEXEC, 3);
        if (copy < 0) {
                int e = fd < 0 ? EBADF : errno;

                g_set_error(error, FHASH_CLIENT_ERROR, (gint)FHASH_CLIENT_ERROR_INVALID_ARGS, "fd %d: %s", fd,
                            g_strerror(e));
                return NULL;
        }
        in = g_new0(FhashInput, 1);
        g_atomic_ref_count_init(&in->ref);
        in->fd = copy;
        in->name = g_strdup(name ? name : "");
        return in;
}

/**
 * fhash_input_ref:
 * @input: an input
 *
 * Returns: (transfer full): @input, with one more reference
 */
FhashInput *fhash_input_ref(FhashInput *input)
{
        g_return_val_if_fail(input, NULL);
        g_atomic_ref_count_inc(&input->ref);
        return input;
}

/**
 * fhash_input_unref:
 * @input: (transfer full): an input
 *
 * Drops a reference; the last frees it (and closes its duplicate of the fd).
 */
void fhash_input_unref(FhashInput *input)
{
        g_return_if_fail(input);
        if (!g_atomic_ref_count_dec(&input->ref))
                return;
        if (input->fd >= 0)
                (void)g_close(input->fd, NULL);
        g_free(input->path);
        g_free(input->name);
        g_free(input->expected);
        g_free(input->algorithm);
        g_free(input->skip);
        g_free(input);
}

static void set_string(gchar **field, const gchar *value)
{
        g_free(*field);
        *field = g_strdup(value);
}

/**
 * fhash_input_set_name:
 * @input: an input
 * @name: (nullable) (type filename): the name its result carries (%NULL: the path)
 */
void fhash_input_set_name(FhashInput *input, const gchar *name)
{
        g_return_if_fail(input);
        set_string(&input->name, name);
}

/**
 * fhash_input_set_expected:
 * @input: an input
 * @expected: (nullable): the digest the file must have, in hex: another gives %FHASH_STATUS_MISMATCH
 */
void fhash_input_set_expected(FhashInput *input, const gchar *expected)
{
        g_return_if_fail(input);
        set_string(&input->expected, expected && *expected ? expected : NULL);
}

/**
 * fhash_input_set_algorithm:
 * @input: an input
 * @algorithm: (nullable): this input's own algorithm (one name; %NULL: the client's)
 */
void fhash_input_set_algorithm(FhashInput *input, const gchar *algorithm)
{
        g_return_if_fail(input);
        set_string(&input->algorithm, algorithm);
}

/**
 * fhash_input_set_skip:
 * @input: an input
 * @reason: (nullable): a reason not to hash it: its result is %FHASH_STATUS_SKIPPED and carries
 *   the reason, in its turn among the others
 */
void fhash_input_set_skip(FhashInput *input, const gchar *reason)
{
        g_return_if_fail(input);
        set_string(&input->skip, reason);
}

/**
 * fhash_input_get_path:
 * @input: an input
 *
 * Returns: (nullable) (type filename): its path, or %NULL for an open file
 */
const gchar *fhash_input_get_path(FhashInput *input)
{
        g_return_val_if_fail(input, NULL);
        return input->path;
}

/**
 * fhash_input_get_name:
 * @input: an input
 *
 * Returns: (nullable) (type filename): the name its result will carry (%NULL: its path)
 */
const gchar *fhash_input_get_name(FhashInput *input)
{
        g_return_val_if_fail(input, NULL);
        return input->name;
}

void input_to_core(FhashInput *input, fhash_input *ret)
{
        ret->path = input->path;
        ret->fd = input->path ? -1 : input->fd;
        ret->name = input->name;
        ret->expected = input->expected;
        ret->algorithm = input->algorithm;
        ret->skip = input->skip;
        ret->userdata = input;
}
