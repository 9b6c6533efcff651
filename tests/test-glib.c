/* SPDX-License-Identifier: MIT */
/* test-glib.c: libfhash-glib from C, in-process (FHASH_CLIENT_FLAGS_LOCAL): the runs on a main loop,
 * their results and errors, cancelling, and every reference dropped (the sanitizer builds check the
 * C code here, where the typelib, and so tests/integration/test-glib.py, is not built) */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include <glib/gstdio.h>

#include "fhash-glib.h"

#define N_FILES 200

typedef struct Fixture {
        gchar *dir;
        gchar *paths[N_FILES + 1];
        gchar *digests[N_FILES];
        FhashClient *client;
} Fixture;

static gchar *sha256_hex(const void *data, gsize n)
{
        return g_compute_checksum_for_data(G_CHECKSUM_SHA256, data, n);
}

static int setup(void **state)
{
        Fixture *f = g_new0(Fixture, 1);
        GRand *rand = g_rand_new_with_seed(27);

        f->dir = g_dir_make_tmp("fhash-glib-XXXXXX", NULL);
        assert_non_null(f->dir);
        for (guint i = 0; i < N_FILES; i++) {
                gsize n = i % 7 ? (gsize)g_rand_int_range(rand, 1, 70000) : 0;
                g_autofree guint8 *data = g_malloc(MAX(n, 1));

                for (gsize k = 0; k < n; k++)
                        data[k] = (guint8)g_rand_int(rand);
                f->paths[i] = g_strdup_printf("%s/f%03u", f->dir, i);
                assert_true(g_file_set_contents(f->paths[i], (const gchar *)data, (gssize)n, NULL));
                f->digests[i] = sha256_hex(data, n);
        }
        g_rand_free(rand);
        f->client = fhash_client_new_for_bus(FHASH_BUS_TYPE_SYSTEM, FHASH_CLIENT_FLAGS_LOCAL);
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        Fixture *f = *state;

        /* The last reference: a run still holding one would leak it (the sanitizer builds say so). */
        g_object_unref(f->client);
        for (guint i = 0; i < N_FILES; i++) {
                (void)g_unlink(f->paths[i]);
                g_free(f->paths[i]);
                g_free(f->digests[i]);
        }
        (void)g_rmdir(f->dir);
        g_free(f->dir);
        g_free(f);
        return 0;
}

/* Runs the default context until *done, at most 60 s. */
static void iterate_until(const gboolean *done)
{
        gint64 deadline = g_get_monotonic_time() + 60 * G_USEC_PER_SEC;

        while (!*done && g_get_monotonic_time() < deadline)
                (void)g_main_context_iteration(NULL, TRUE);
        assert_true(*done);
}

typedef struct Call {
        gboolean done;
        GAsyncResult *result;
} Call;

static void on_done(GObject *source, GAsyncResult *result, gpointer user_data)
{
        Call *c = user_data;

        c->result = g_object_ref(result);
        c->done = TRUE;
}

static void on_result(FhashClient *client, FhashResult *result, gpointer user_data)
{
        g_ptr_array_add(user_data, fhash_result_ref(result));
}

static void test_paths(void **state)
{
        Fixture *f = *state;
        g_autoptr(GPtrArray) signalled = g_ptr_array_new_with_free_func((GDestroyNotify)fhash_result_unref);
        g_autoptr(GPtrArray) results = NULL;
        g_autoptr(GError) error = NULL;
        g_autofree gchar *missing = g_strdup_printf("%s/missing", f->dir);
        const gchar *paths[N_FILES + 3];
        guint64 done = 0, total = 0, bytes = 0;
        Call c = { 0 };
        const GError *e;
        gulong h;

        for (guint i = 0; i < N_FILES; i++)
                paths[i] = f->paths[i];
        paths[N_FILES] = missing;
        paths[N_FILES + 1] = f->dir;
        paths[N_FILES + 2] = NULL;
        h = g_signal_connect(f->client, "result", G_CALLBACK(on_result), signalled);
        fhash_client_hash_async(f->client, paths, NULL, on_done, &c);
        iterate_until(&c.done);
        results = fhash_client_hash_finish(f->client, c.result, &error);
        g_object_unref(c.result);
        g_signal_handler_disconnect(f->client, h);
        assert_null(error);
        assert_int_equal(results->len, N_FILES + 2);
        assert_int_equal(signalled->len, N_FILES + 2);
        assert_false(fhash_client_get_uses_daemon(f->client));
        for (guint i = 0; i < N_FILES; i++) {
                FhashResult *r = g_ptr_array_index(results, i);

                assert_ptr_equal(r, g_ptr_array_index(signalled, i));
                assert_int_equal(fhash_result_get_index(r), i);
                assert_int_equal(fhash_result_get_status(r), FHASH_STATUS_OK);
                assert_string_equal(fhash_result_get_name(r), f->paths[i]);
                assert_string_equal(fhash_result_get_digest(r), f->digests[i]);
                assert_string_equal(fhash_result_get_algorithm(r), "sha256");
                assert_null(fhash_result_get_error(r));
                assert_true(fhash_result_propagate_error(r, NULL));
        }
        e = fhash_result_get_error(g_ptr_array_index(results, N_FILES));
        assert_int_equal(fhash_result_get_status(g_ptr_array_index(results, N_FILES)), FHASH_STATUS_ERROR);
        assert_true(g_error_matches(e, FHASH_CLIENT_ERROR, FHASH_CLIENT_ERROR_NOT_FOUND));
        assert_string_equal(e->message, g_strerror(ENOENT));
        assert_null(fhash_result_get_digest(g_ptr_array_index(results, N_FILES)));
        assert_false(fhash_result_propagate_error(g_ptr_array_index(results, N_FILES), &error));
        assert_true(g_error_matches(error, FHASH_CLIENT_ERROR, FHASH_CLIENT_ERROR_NOT_FOUND));
        e = fhash_result_get_error(g_ptr_array_index(results, N_FILES + 1));
        assert_true(g_error_matches(e, FHASH_CLIENT_ERROR, FHASH_CLIENT_ERROR_NOT_REGULAR));
        fhash_client_get_progress(f->client, &done, &total, &bytes, NULL);
        assert_int_equal(done, N_FILES + 2);
        assert_int_equal(total, N_FILES + 2);
        for (guint i = 0; i < N_FILES; i++) {
                struct stat st;

                assert_int_equal(g_stat(f->paths[i], &st), 0);
                bytes -= (guint64)st.st_size;
        }
        assert_int_equal(bytes, 0);
}

static void test_fds(void **state)
{
        Fixture *f = *state;
        g_autoptr(GPtrArray) results = NULL;
        g_autoptr(GError) error = NULL;
        g_autofree gchar *pipe_digest = sha256_hex("through a pipe", 14);
        const gchar *names[] = { "the file", NULL };
        int fds[2], p[2];
        Call c = { 0 };

        fds[0] = open(f->paths[3], O_RDONLY | O_CLOEXEC);
        assert_true(fds[0] >= 0);
        assert_int_equal(pipe(p), 0);
        assert_int_equal(write(p[1], "through a pipe", 14), 14);
        (void)close(p[1]);
        fds[1] = p[0];
        fhash_client_hash_fds_async(f->client, fds, 2, names, NULL, on_done, &c);
        /* The client holds its own copies. */
        (void)close(fds[0]);
        (void)close(fds[1]);
        iterate_until(&c.done);
        results = fhash_client_hash_fds_finish(f->client, c.result, &error);
        g_object_unref(c.result);
        assert_null(error);
        assert_int_equal(results->len, 2);
        assert_string_equal(fhash_result_get_name(g_ptr_array_index(results, 0)), "the file");
        assert_string_equal(fhash_result_get_digest(g_ptr_array_index(results, 0)), f->digests[3]);
        assert_string_equal(fhash_result_get_name(g_ptr_array_index(results, 1)), "");
        assert_string_equal(fhash_result_get_digest(g_ptr_array_index(results, 1)), pipe_digest);

        /* A closed fd fails the call, naming it. */
        memset(&c, 0, sizeof(c));
        fds[0] = 987654;
        fhash_client_hash_fds_async(f->client, fds, 1, NULL, NULL, on_done, &c);
        iterate_until(&c.done);
        assert_null(fhash_client_hash_fds_finish(f->client, c.result, &error));
        g_object_unref(c.result);
        assert_true(g_error_matches(error, FHASH_CLIENT_ERROR, FHASH_CLIENT_ERROR_INVALID_ARGS));
        assert_non_null(strstr(error->message, "987654"));
}

static gboolean set_flag(gpointer user_data)
{
        *(gboolean *)user_data = TRUE;
        return G_SOURCE_REMOVE;
}

/* Runs the default context for ms milliseconds. */
static void run_for(guint ms)
{
        gboolean done = FALSE;

        g_timeout_add(ms, set_flag, &done);
        iterate_until(&done);
}

typedef struct Walk {
        Fixture *f;
        guint next, stop_at;
        GCancellable *cancellable;
        GPtrArray *signalled;
        guint at_cancel;
        gboolean destroyed;
} Walk;

static FhashInput *walk_next(gpointer user_data)
{
        Walk *w = user_data;
        FhashInput *in;

        if (w->next == N_FILES)
                return NULL;
        in = fhash_input_new_for_path(w->f->paths[w->next++]);
        if (w->next == w->stop_at) {
                w->at_cancel = w->signalled->len;
                g_cancellable_cancel(w->cancellable);
        }
        return in;
}

static void walk_destroy(gpointer user_data)
{
        Walk *w = user_data;

        w->destroyed = TRUE;
}

/* A walk cancelled at its half: the run finishes at once, cancelled; the walk is not called again
 * and no result comes after. */
static void test_source_cancel(void **state)
{
        Fixture *f = *state;
        g_autoptr(GCancellable) cancellable = g_cancellable_new();
        g_autoptr(GPtrArray) signalled = g_ptr_array_new_with_free_func((GDestroyNotify)fhash_result_unref);
        g_autoptr(GError) error = NULL;
        Walk w = { .f = f, .stop_at = N_FILES / 2, .cancellable = cancellable, .signalled = signalled };
        Call c = { 0 };
        gulong h;

        h = g_signal_connect(f->client, "result", G_CALLBACK(on_result), signalled);
        fhash_client_hash_source_async(f->client, walk_next, &w, walk_destroy, cancellable, on_done, &c);
        iterate_until(&c.done);
        assert_false(fhash_client_hash_source_finish(f->client, c.result, &error));
        g_object_unref(c.result);
        assert_true(g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED));
        /* The run winds down in the background; nothing more comes of it, and the walk is let go. */
        run_for(300);
        g_signal_handler_disconnect(f->client, h);
        assert_int_equal(w.next, N_FILES / 2);
        assert_int_equal(signalled->len, w.at_cancel);
        assert_true(w.destroyed);
}

typedef struct Inputs {
        FhashInput *in[7];
        guint next;
} Inputs;

static FhashInput *inputs_next(gpointer user_data)
{
        Inputs *s = user_data;

        return s->next < G_N_ELEMENTS(s->in) ? s->in[s->next++] : NULL;
}

/* A source's inputs: expected digests right and wrong, a skip, an open file (twice), their own
 * algorithm. */
static void test_source_inputs(void **state)
{
        Fixture *f = *state;
        g_autoptr(GPtrArray) got = g_ptr_array_new_with_free_func((GDestroyNotify)fhash_result_unref);
        g_autoptr(GError) error = NULL;
        g_autofree gchar *md5 = NULL, *data = NULL;
        gsize n = 0;
        Inputs s = { 0 };
        Call c = { 0 };
        gulong h;
        int fd;

        s.in[0] = fhash_input_new_for_path(f->paths[1]);
        fhash_input_set_expected(s.in[0], f->digests[1]);
        s.in[1] = fhash_input_new_for_path(f->paths[2]);
        fhash_input_set_expected(s.in[1], "0000000000000000000000000000000000000000000000000000000000000000");
        s.in[2] = fhash_input_new_for_path(f->paths[3]);
        fhash_input_set_skip(s.in[2], "not today");
        fd = open(f->paths[4], O_RDONLY | O_CLOEXEC);
        s.in[3] = fhash_input_new_for_fd(fd, "fd four", &error);
        (void)close(fd);
        assert_non_null(s.in[3]);
        assert_null(fhash_input_get_path(s.in[3]));
        s.in[4] = fhash_input_new_for_path(f->paths[5]);
        fhash_input_set_algorithm(s.in[4], "md5");
        fhash_input_set_name(s.in[4], "renamed");
        assert_null(fhash_input_new_for_fd(-1, NULL, &error));
        assert_true(g_error_matches(error, FHASH_CLIENT_ERROR, FHASH_CLIENT_ERROR_INVALID_ARGS));
        g_clear_error(&error);
        /* The same input again, with a reference of its own: hashed twice, freed once. */
        s.in[5] = fhash_input_ref(s.in[3]);
        s.in[6] = NULL;

        h = g_signal_connect(f->client, "result", G_CALLBACK(on_result), got);
        fhash_client_hash_source_async(f->client, inputs_next, &s, NULL, NULL, on_done, &c);
        iterate_until(&c.done);
        assert_true(fhash_client_hash_source_finish(f->client, c.result, &error));
        g_object_unref(c.result);
        g_signal_handler_disconnect(f->client, h);
        assert_int_equal(got->len, 6);
        assert_int_equal(fhash_result_get_status(g_ptr_array_index(got, 0)), FHASH_STATUS_OK);
        assert_string_equal(fhash_result_get_expected(g_ptr_array_index(got, 0)), f->digests[1]);
        assert_int_equal(fhash_result_get_status(g_ptr_array_index(got, 1)), FHASH_STATUS_MISMATCH);
        assert_string_equal(fhash_result_get_digest(g_ptr_array_index(got, 1)), f->digests[2]);
        assert_true(g_error_matches(fhash_result_get_error(g_ptr_array_index(got, 1)), FHASH_CLIENT_ERROR,
                                    FHASH_CLIENT_ERROR_MISMATCH));
        assert_int_equal(fhash_result_get_status(g_ptr_array_index(got, 2)), FHASH_STATUS_SKIPPED);
        assert_string_equal(fhash_result_get_skip(g_ptr_array_index(got, 2)), "not today");
        assert_null(fhash_result_get_error(g_ptr_array_index(got, 2)));
        assert_string_equal(fhash_result_get_name(g_ptr_array_index(got, 3)), "fd four");
        assert_string_equal(fhash_result_get_digest(g_ptr_array_index(got, 3)), f->digests[4]);
        assert_true(g_file_get_contents(f->paths[5], &data, &n, NULL));
        md5 = g_compute_checksum_for_data(G_CHECKSUM_MD5, (const guchar *)data, n);
        assert_string_equal(fhash_result_get_name(g_ptr_array_index(got, 4)), "renamed");
        assert_string_equal(fhash_result_get_algorithm(g_ptr_array_index(got, 4)), "md5");
        assert_string_equal(fhash_result_get_digest(g_ptr_array_index(got, 4)), md5);
        assert_string_equal(fhash_result_get_name(g_ptr_array_index(got, 5)), "fd four");
        assert_string_equal(fhash_result_get_digest(g_ptr_array_index(got, 5)), f->digests[4]);
}

/* A run held at a FIFO without data (its writer holds it open), cancelled from a timer: at once. */
static void test_fifo_cancel(void **state)
{
        Fixture *f = *state;
        g_autoptr(GCancellable) cancellable = g_cancellable_new();
        g_autoptr(GError) error = NULL;
        g_autofree gchar *fifo = g_strdup_printf("%s/fifo", f->dir);
        const gchar *paths[] = { f->paths[0], fifo, f->paths[1], NULL };
        gint64 t0 = 0;
        Call c = { 0 };
        int holder;

        assert_int_equal(mkfifo(fifo, 0600), 0);
        holder = open(fifo, O_RDWR | O_CLOEXEC);
        assert_true(holder >= 0);
        fhash_client_hash_async(f->client, paths, cancellable, on_done, &c);
        run_for(200);
        assert_false(c.done);
        t0 = g_get_monotonic_time();
        g_cancellable_cancel(cancellable);
        iterate_until(&c.done);
        assert_true(g_get_monotonic_time() - t0 < G_USEC_PER_SEC);
        assert_null(fhash_client_hash_finish(f->client, c.result, &error));
        g_object_unref(c.result);
        assert_true(g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED));
        /* The engine's read of the FIFO ends with its writer; then the run is over and lets go. */
        (void)close(holder);
        run_for(300);
        (void)g_unlink(fifo);
        g_clear_error(&error);

        /* Cancelled before the call: nothing starts. */
        memset(&c, 0, sizeof(c));
        fhash_client_hash_async(f->client, paths, cancellable, on_done, &c);
        iterate_until(&c.done);
        assert_null(fhash_client_hash_finish(f->client, c.result, &error));
        g_object_unref(c.result);
        assert_true(g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED));
}

static void test_errors(void **state)
{
        Fixture *f = *state;
        g_autoptr(GError) error = NULL;
        g_autofree gchar *sock = g_strdup_printf("unix:path=%s/no-such-bus", f->dir);
        g_autoptr(FhashClient) nobus = fhash_client_new_for_address(sock, FHASH_CLIENT_FLAGS_NO_FALLBACK);
        g_autoptr(FhashClient) fallback = fhash_client_new_for_address(sock, FHASH_CLIENT_FLAGS_NONE);
        g_autoptr(FhashClient) bad = fhash_client_new_for_address("no address", FHASH_CLIENT_FLAGS_NONE);
        g_autofree gchar *reason = NULL;
        const gchar *paths[] = { f->paths[0], NULL };
        g_autoptr(GPtrArray) results = NULL;
        Call c = { 0 };

        /* An unknown algorithm, named. */
        fhash_client_set_algorithm(f->client, "sha257");
        fhash_client_hash_async(f->client, paths, NULL, on_done, &c);
        iterate_until(&c.done);
        assert_null(fhash_client_hash_finish(f->client, c.result, &error));
        g_object_unref(c.result);
        assert_true(g_error_matches(error, FHASH_CLIENT_ERROR, FHASH_CLIENT_ERROR_INVALID_ARGS));
        assert_non_null(strstr(error->message, "sha257"));
        fhash_client_set_algorithm(f->client, NULL);
        assert_string_equal(fhash_client_get_algorithm(f->client), "sha256");
        g_clear_error(&error);

        /* No bus there and no fallback: NOT_REACHABLE, naming the socket. */
        memset(&c, 0, sizeof(c));
        fhash_client_connect_async(nobus, NULL, on_done, &c);
        iterate_until(&c.done);
        assert_false(fhash_client_connect_finish(nobus, c.result, &error));
        g_object_unref(c.result);
        assert_true(g_error_matches(error, FHASH_CLIENT_ERROR, FHASH_CLIENT_ERROR_NOT_REACHABLE));
        assert_non_null(strstr(error->message, f->dir));
        g_clear_error(&error);

        /* With fallback: in-process, saying why. */
        memset(&c, 0, sizeof(c));
        fhash_client_hash_async(fallback, paths, NULL, on_done, &c);
        iterate_until(&c.done);
        results = fhash_client_hash_finish(fallback, c.result, &error);
        g_object_unref(c.result);
        assert_null(error);
        assert_string_equal(fhash_result_get_digest(g_ptr_array_index(results, 0)), f->digests[0]);
        assert_false(fhash_client_get_uses_daemon(fallback));
        reason = fhash_client_dup_fallback_reason(fallback);
        assert_non_null(reason);
        assert_non_null(strstr(reason, f->dir));

        /* Not a D-Bus address. */
        memset(&c, 0, sizeof(c));
        fhash_client_hash_async(bad, paths, NULL, on_done, &c);
        iterate_until(&c.done);
        assert_null(fhash_client_hash_finish(bad, c.result, &error));
        g_object_unref(c.result);
        assert_true(g_error_matches(error, FHASH_CLIENT_ERROR, FHASH_CLIENT_ERROR_INVALID_ARGS));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_paths, setup, teardown),
                cmocka_unit_test_setup_teardown(test_fds, setup, teardown),
                cmocka_unit_test_setup_teardown(test_source_cancel, setup, teardown),
                cmocka_unit_test_setup_teardown(test_source_inputs, setup, teardown),
                cmocka_unit_test_setup_teardown(test_fifo_cancel, setup, teardown),
                cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
