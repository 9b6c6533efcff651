/* SPDX-License-Identifier: MIT */
/* test-job.c: the per-uid charges on every path a job, an owner or a direct connection takes, with an
 * engine and an event loop but no bus (as dbus-broker's src/bus/test-reply.c) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "basic/macro.h"
#include "basic/time-util.h"
#include "daemon/config.h"
#include "daemon/job.h"
#include "daemon/owner.h"
#include "daemon/peer.h"
#include "daemon/registry.h"
#include "daemon/user.h"
#include "fhash/fhash-dbus.h"

#include "daemon/test-util.h"

/* -- the model's paths, with an engine and an event loop but no bus -- */

typedef struct Fixture {
        Context c;
        sd_bus *conn;  /* stands for a client's direct connection: never started, so signals to it fail */
        sd_event_source *engine_source;
} Fixture;

static int on_engine(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
        (void)engine_dispatch(userdata);
        return 0;
}

static int fixture_setup(void **state)
{
        const UserLimit limits[_USER_RESOURCE_MAX] = {
                [USER_RESOURCE_JOBS] = { .per_uid = 2 },
                [USER_RESOURCE_FILES] = { .per_uid = 5 },
                [USER_RESOURCE_OWNERS] = { .total = 8 },
                [USER_RESOURCE_PEERS] = { .per_uid = 1, .total = 4 },
        };
        const EngineConfig ec = { .workers = 1, .buffers = 8, .buffer_size = 65536, .io_mode = IO_MODE_PREAD,
                                  .no_pin = true };
        Fixture *f = calloc(1, sizeof(*f));

        assert_non_null(f);
        registry_init(&f->c.registry, limits);
        f->c.keep_finished_usec = 60 * USEC_PER_SEC;
        assert_int_equal(sd_event_new(&f->c.event), 0);
        assert_int_equal(engine_new(&ec, &f->c.engine), 0);
        assert_int_equal(sd_event_add_io(f->c.event, &f->engine_source, engine_get_fd(f->c.engine), EPOLLIN,
                                         on_engine, f->c.engine),
                         0);
        assert_int_equal(sd_bus_new(&f->conn), 0);
        *state = f;
        return 0;
}

static int fixture_teardown(void **state)
{
        Fixture *f = *state;

        assert_registry_empty(&f->c.registry);
        registry_done(&f->c.registry);
        sd_bus_unref(f->conn);
        sd_event_source_disable_unref(f->engine_source);
        engine_free(f->c.engine);
        sd_event_unref(f->c.event);
        free(f);
        return 0;
}

/* Runs the loop until cond(j) holds (at most ~10 s). */
static void run_until(Fixture *f, bool (*cond)(const Job *j), const Job *j)
{
        for (int i = 0; i < 10000 && !cond(j); i++)
                assert_true(sd_event_run(f->c.event, 1000) >= 0);
        assert_true(cond(j));
}

static bool is_finished(const Job *j)
{
        return job_is_finished(j);
}

static bool has_results(const Job *j)
{
        return j->results.files_done == j->results.n_inputs;
}

/* A regular file with content, as a client would pass it. */
static int data_fd(size_t size)
{
        int fd = memfd_create("test-registry", MFD_CLOEXEC);

        assert_true(fd >= 0);
        assert_int_equal(ftruncate(fd, (off_t)size), 0);
        return fd;
}

static Job *new_job(Fixture *f, uid_t uid, const char *owner, bool open)
{
        const EngineJobOptions eo = { .regular_only = true };
        Job *j = NULL;

        assert_int_equal(job_new(&f->c, owner, uid, &HASH_ALGO_SET_ONE(HASH_SHA256), &eo, false, open, &j), 0);
        return j;
}

/* H5: a job's results, names and expected digests are charged to its uid's memory while the job
 * exists, finished or not; a call past the limit is refused and leaves nothing charged. */
static void test_memory_charges(void **state)
{
        Fixture *f = *state;
        Registry *reg = &f->c.registry;
        const char name[] = "0123456789abcdef"; /* 17 bytes with its nul */
        const char hex[] = "00000000000000000000000000000000000000000000000000000000000000ff";
        Job *j, *k;
        uint32_t first;

        /* Room for three results and one name. */
        reg->users.limits[USER_RESOURCE_MEMORY] = (UserLimit){ .per_uid = 3 * JOB_RESULT_COST + 20 };
        j = new_job(f, UID_A, "a/direct/1", true);
        assert_int_equal(job_begin_inputs(j, 2, &first), 0);
        assert_int_equal(used(reg, UID_A, USER_RESOURCE_MEMORY), 2 * JOB_RESULT_COST);
        assert_int_equal(job_set_name(j, 0, name), 0);
        assert_int_equal(job_set_expected(j, 1, hex), 0);
        assert_int_equal(used(reg, UID_A, USER_RESOURCE_MEMORY), 2 * JOB_RESULT_COST + 17 + 65);
        /* Aborted, the call gives all of it back. */
        job_abort_inputs(j);
        assert_int_equal(used(reg, UID_A, USER_RESOURCE_MEMORY), 0);

        /* Three results and a name fit, a second name does not; the second job of A shares A's
         * budget. */
        assert_int_equal(job_begin_inputs(j, 2, &first), 0);
        assert_int_equal(job_set_name(j, 0, name), 0);
        k = new_job(f, UID_A, "a/direct/1", true);
        assert_int_equal(job_begin_inputs(k, 1, &first), 0);
        assert_int_equal(job_set_name(k, 0, name), USER_E_QUOTA);
        assert_int_equal(k->refused, USER_RESOURCE_MEMORY);
        job_abort_inputs(k);
        assert_int_equal(job_begin_inputs(k, 2, &first), USER_E_QUOTA);
        assert_int_equal(k->refused, USER_RESOURCE_MEMORY);
        assert_int_equal(used(reg, UID_A, USER_RESOURCE_FILES), 2);
        assert_int_equal(used(reg, UID_A, USER_RESOURCE_MEMORY), 2 * JOB_RESULT_COST + 17);
        job_free(k);
        /* The job going gives back what its results held. */
        job_abort_inputs(j);
        job_free(j);
        assert_int_equal(used(reg, UID_A, USER_RESOURCE_MEMORY), 0);
        reg->users.limits[USER_RESOURCE_MEMORY] = (UserLimit){};
}

static void test_job_charges(void **state)
{
        Fixture *f = *state;
        Registry *reg = &f->c.registry;
        const EngineJobOptions eo = {};
        Job *j, *k, *refused = NULL;
        uint32_t first;

        /* Accepted: one job, and its inputs as files. */
        j = new_job(f, UID_A, "a/direct/1", false);
        assert_int_equal(used(reg, UID_A, USER_RESOURCE_JOBS), 1);
        assert_int_equal(job_begin_inputs(j, 3, &first), 0);
        assert_int_equal(first, 0);
        assert_int_equal(used(reg, UID_A, USER_RESOURCE_FILES), 3);

        /* Limits: 3 more files pass A's 5, and are refused without a trace; B is not A. */
        k = new_job(f, UID_A, "a/direct/1", true);
        assert_int_equal(job_begin_inputs(k, 3, &first), USER_E_QUOTA);
        assert_int_equal(k->results.n_inputs, 0);
        assert_int_equal(used(reg, UID_A, USER_RESOURCE_FILES), 3);
        assert_int_equal(job_new(&f->c, "a/direct/1", UID_A, &HASH_ALGO_SET_ONE(HASH_SHA256), &eo, false, false, &refused), USER_E_QUOTA);
        assert_null(refused);
        assert_int_equal(used(reg, UID_A, USER_RESOURCE_JOBS), 2);
        refused = new_job(f, UID_B, "b/direct/2", false);
        assert_int_equal(used(reg, UID_B, USER_RESOURCE_JOBS), 1);
        job_free(refused);
        assert_int_equal(used(reg, UID_B, USER_RESOURCE_JOBS), 0);

        /* An aborted call gives its files back. */
        assert_int_equal(job_begin_inputs(k, 2, &first), 0);
        assert_int_equal(used(reg, UID_A, USER_RESOURCE_FILES), 5);
        job_abort_inputs(k);
        assert_int_equal(used(reg, UID_A, USER_RESOURCE_FILES), 3);
        job_free(k);

        /* A file that fails up front has its result when the call is committed; the others when
         * the engine is done with them; the job when it finishes. */
        assert_int_equal(job_fail_input(j, 0, FHASH_ERROR_NOT_REGULAR, "is a directory"), 0);
        assert_int_equal(job_add_input(j, 1, data_fd(4096), 0, NULL, NULL, NULL), 0);
        assert_int_equal(job_add_input(j, 2, data_fd(100000), 0, NULL, NULL, NULL), 0);
        assert_int_equal(job_start(j, f->conn), 0);
        assert_true(used(reg, UID_A, USER_RESOURCE_FILES) <= 2);
        assert_int_equal(used(reg, UID_A, USER_RESOURCE_OWNERS), 1);
        run_until(f, is_finished, j);
        assert_int_equal(j->state, JOB_FAILED);
        assert_int_equal(j->results.files_ok, 2);
        assert_int_equal(j->results.files_failed, 1);
        assert_int_equal(j->bytes_done, 104096);
        assert_int_equal(used(reg, UID_A, USER_RESOURCE_FILES), 0);
        assert_int_equal(used(reg, UID_A, USER_RESOURCE_JOBS), 0);
        assert_int_equal(registry_n_active_jobs(reg), 0);

        /* Finished, it lingers: still listed, its owner still tracked, until it is freed. */
        assert_ptr_equal(registry_find_job(reg, j->entry.id), j);
        assert_int_equal(registry_n_owners(reg), 1);
        job_free(j);
        assert_int_equal(registry_n_owners(reg), 0);
}

static void test_open_job(void **state)
{
        Fixture *f = *state;
        Registry *reg = &f->c.registry;
        Job *j = new_job(f, UID_A, "a/direct/1", true);
        uint32_t first;

        /* An open job's files are given back one by one as they are done; the job stays charged
         * until it is closed and done. */
        assert_int_equal(job_begin_inputs(j, 1, &first), 0);
        assert_int_equal(job_add_input(j, 0, data_fd(5000), 0, NULL, NULL, NULL), 0);
        assert_int_equal(job_start(j, f->conn), 0);
        run_until(f, has_results, j);
        assert_int_equal(used(reg, UID_A, USER_RESOURCE_FILES), 0);
        assert_int_equal(used(reg, UID_A, USER_RESOURCE_JOBS), 1);
        assert_false(job_is_finished(j));

        /* Parts: every call is one, and the totals add up whatever order they finish in. */
        for (int call = 0; call < 20; call++) {
                assert_int_equal(job_begin_inputs(j, 2, &first), 0);
                assert_int_equal(job_add_input(j, first, data_fd(3000), 0, NULL, NULL, NULL), 0);
                assert_int_equal(job_add_input(j, first + 1, data_fd(7000), 0, NULL, NULL, NULL), 0);
                assert_int_equal(job_commit_inputs(j, call < 19), 0);
                assert_true(used(reg, UID_A, USER_RESOURCE_FILES) <= 5);
                run_until(f, has_results, j);
        }
        run_until(f, is_finished, j);
        assert_int_equal(j->state, JOB_DONE);
        assert_int_equal(j->results.files_ok, 41);
        assert_int_equal(j->bytes_done, 5000 + 20 * 10000);
        assert_int_equal(j->bytes_total, 5000 + 20 * 10000);
        assert_null(j->parts.head);
        assert_int_equal(j->parts.live_bytes_done, 0);
        assert_int_equal(used(reg, UID_A, USER_RESOURCE_JOBS), 0);
        job_free(j);
}

static void test_freed_unfinished(void **state)
{
        Fixture *f = *state;
        Registry *reg = &f->c.registry;
        Job *j = new_job(f, UID_A, "a/direct/1", true);
        uint32_t first;

        /* Open, with nothing for the engine: unfinished until closed. Freed in the middle of a call,
         * it gives back the job and the call's files. */
        assert_int_equal(job_begin_inputs(j, 1, &first), 0);
        assert_int_equal(job_fail_input(j, 0, FHASH_ERROR_NOT_REGULAR, "is a socket"), 0);
        assert_int_equal(job_start(j, f->conn), 0);
        assert_int_equal(used(reg, UID_A, USER_RESOURCE_FILES), 0);
        assert_int_equal(job_begin_inputs(j, 4, &first), 0);
        assert_int_equal(used(reg, UID_A, USER_RESOURCE_FILES), 4);
        assert_int_equal(used(reg, UID_A, USER_RESOURCE_JOBS), 1);
        job_free(j);
}

static void test_owner_gone(void **state)
{
        Fixture *f = *state;
        Registry *reg = &f->c.registry;
        Job *jobs[2], *closed;
        uint32_t first;

        /* Two open jobs of one client: one owner, charged once. */
        for (size_t i = 0; i < ELEMENTSOF(jobs); i++) {
                jobs[i] = new_job(f, UID_A, "a/direct/1", true);
                assert_int_equal(job_begin_inputs(jobs[i], 1, &first), 0);
                assert_int_equal(job_fail_input(jobs[i], 0, FHASH_ERROR_NOT_REGULAR, "is a socket"), 0);
                assert_int_equal(job_start(jobs[i], f->conn), 0);
        }
        /* And a closed one whose every input has its result, not finished yet (its end comes on the
         * next turn of the loop, as the engine's end of a job does): the client may leave first, as
         * soon as it has the results. */
        closed = new_job(f, UID_B, "b/direct/2", false);
        assert_int_equal(job_begin_inputs(closed, 1, &first), 0);
        assert_int_equal(job_fail_input(closed, 0, FHASH_ERROR_NOT_REGULAR, "is a socket"), 0);
        assert_int_equal(job_start(closed, f->conn), 0);
        assert_false(job_is_finished(closed));
        assert_int_equal(used(reg, UID_A, USER_RESOURCE_OWNERS), 1);
        assert_int_equal(used(reg, UID_A, USER_RESOURCE_JOBS), 2);

        /* The client leaves: its open jobs end cancelled, the complete one as it would have, and
         * nothing is charged any more. */
        owner_disconnected(&f->c, "a/direct/1");
        owner_disconnected(&f->c, "b/direct/2");
        for (size_t i = 0; i < ELEMENTSOF(jobs); i++) {
                assert_int_equal(jobs[i]->state, JOB_CANCELLED);
                assert_true(jobs[i]->owner_gone);
        }
        assert_int_equal(closed->state, JOB_FAILED);
        assert_int_equal(closed->results.files_failed, 1);
        assert_int_equal(registry_n_owners(reg), 0);
        assert_int_equal(used(reg, UID_A, USER_RESOURCE_OWNERS), 0);
        assert_int_equal(used(reg, UID_A, USER_RESOURCE_JOBS), 0);
        owner_disconnected(&f->c, "a/direct/1");
        for (size_t i = 0; i < ELEMENTSOF(jobs); i++)
                job_free(jobs[i]);
        job_free(closed);
}

static bool peer_gone(const Job *j)
{
        return j->state == JOB_CANCELLED;
}

static void test_peer_closed(void **state)
{
        Fixture *f = *state;
        Registry *reg = &f->c.registry;
        Peer *p = NULL, *q = NULL, *r = NULL;
        int fd = -EBADF, fd2 = -EBADF;
        uint32_t first;
        Job *j;

        /* One connection per uid here; the next is refused before anything is made. */
        assert_int_equal(peer_new(&f->c, ":1.7", UID_A, &p, &fd), 0);
        assert_int_equal(used(reg, UID_A, USER_RESOURCE_PEERS), 1);
        assert_ptr_equal(registry_find_peer(reg, p->bus)->peer, p);
        assert_string_equal(p->name, ":1.7/direct/1");
        assert_int_equal(peer_new(&f->c, ":1.7", UID_A, &q, &fd2), USER_E_QUOTA);
        assert_null(q);
        assert_int_equal(peer_new(&f->c, ":1.8", UID_B, &r, &fd2), 0);
        /* The client's end first: sd_bus_flush_close_unref() in peer_free() waits on a connection
         * whose handshake has not finished while its other end is open. */
        safe_close(fd2);
        peer_free(r);
        assert_int_equal(used(reg, UID_B, USER_RESOURCE_PEERS), 0);

        /* A job owned by the connection: closing the client's end cancels it and gives back the
         * job, the owner and the connection. */
        j = new_job(f, UID_A, p->name, true);
        assert_int_equal(job_begin_inputs(j, 1, &first), 0);
        assert_int_equal(job_fail_input(j, 0, FHASH_ERROR_NOT_REGULAR, "is a socket"), 0);
        assert_int_equal(job_start(j, p->bus), 0);
        assert_int_equal(used(reg, UID_A, USER_RESOURCE_OWNERS), 1);
        safe_close(fd);
        run_until(f, peer_gone, j);
        assert_int_equal(registry_n_peers(reg), 0);
        assert_int_equal(used(reg, UID_A, USER_RESOURCE_PEERS), 0);
        assert_int_equal(used(reg, UID_A, USER_RESOURCE_OWNERS), 0);
        assert_int_equal(used(reg, UID_A, USER_RESOURCE_JOBS), 0);
        job_free(j);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_job_charges, fixture_setup, fixture_teardown),
                cmocka_unit_test_setup_teardown(test_memory_charges, fixture_setup, fixture_teardown),
                cmocka_unit_test_setup_teardown(test_open_job, fixture_setup, fixture_teardown),
                cmocka_unit_test_setup_teardown(test_freed_unfinished, fixture_setup, fixture_teardown),
                cmocka_unit_test_setup_teardown(test_owner_gone, fixture_setup, fixture_teardown),
                cmocka_unit_test_setup_teardown(test_peer_closed, fixture_setup, fixture_teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
