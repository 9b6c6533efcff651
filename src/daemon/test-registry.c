/* SPDX-License-Identifier: MIT */
/* test-registry.c: the registry's lookups and the per-uid charges alone, without a bus or an engine
 * (as dbus-broker's src/bus/test-reply.c); test-job.c follows jobs, owners and peers through them */
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

/* -- the accounting alone -- */

static void test_user_charges(void **state)
{
        const UserLimit limits[_USER_RESOURCE_MAX] = {
                [USER_RESOURCE_JOBS] = { .per_uid = 2 },
                [USER_RESOURCE_FILES] = { .per_uid = 10, .total = 15 },
                [USER_RESOURCE_PEERS] = { .per_uid = 1, .total = 2, .reserve = 1 },
        };
        UserRegistry ur;
        UserCharge a_jobs = USER_CHARGE_INIT(USER_RESOURCE_JOBS), b_jobs = USER_CHARGE_INIT(USER_RESOURCE_JOBS);
        UserCharge a_files = USER_CHARGE_INIT(USER_RESOURCE_FILES), b_files = USER_CHARGE_INIT(USER_RESOURCE_FILES);
        UserCharge c_files = USER_CHARGE_INIT(USER_RESOURCE_FILES);
        UserCharge peers[3] = { USER_CHARGE_INIT(USER_RESOURCE_PEERS), USER_CHARGE_INIT(USER_RESOURCE_PEERS),
                                USER_CHARGE_INIT(USER_RESOURCE_PEERS) };
        User *a, *b, *c, *root;

        user_registry_init(&ur, limits);
        assert_int_equal(user_registry_ref(&ur, UID_A, &a), 0);
        assert_int_equal(user_registry_ref(&ur, UID_B, &b), 0);
        assert_int_equal(user_registry_ref(&ur, 1002, &c), 0);
        assert_int_equal(user_registry_ref(&ur, 0, &root), 0);
        assert_ptr_equal(user_registry_find(&ur, UID_A), a);

        /* Per uid: the third job of A is refused, B's count is its own. */
        assert_int_equal(user_charge(a, &a_jobs, 1), 0);
        assert_int_equal(user_charge(a, &a_jobs, 1), 0);
        assert_int_equal(user_check(&ur, UID_A, USER_RESOURCE_JOBS, 1), USER_E_QUOTA);
        assert_int_equal(user_charge(a, &a_jobs, 1), USER_E_QUOTA);
        assert_int_equal(user_used(a, USER_RESOURCE_JOBS), 2);
        assert_int_equal(a_jobs.amount, 2);
        assert_int_equal(user_charge(b, &b_jobs, 2), 0);
        assert_int_equal(ur.total[USER_RESOURCE_JOBS], 4);

        /* Per uid and in all: A's 8 + 3 passes 10; B's 7 fills the 15 of all; then nobody gets one. */
        assert_int_equal(user_charge(a, &a_files, 8), 0);
        assert_int_equal(user_charge(a, &a_files, 3), USER_E_QUOTA);
        assert_int_equal(user_charge(b, &b_files, 7), 0);
        assert_int_equal(user_check(&ur, 1002, USER_RESOURCE_FILES, 1), USER_E_TOTAL);
        assert_int_equal(user_charge(c, &c_files, 1), USER_E_TOTAL);
        assert_int_equal(user_used(c, USER_RESOURCE_FILES), 0);
        /* A refused charge took nothing; a release makes room again, for anyone. */
        user_charge_release(&b_files, 2);
        assert_int_equal(user_charge(c, &c_files, 2), 0);
        assert_int_equal(ur.total[USER_RESOURCE_FILES], 15);
        /* Releasing more than a charge holds gives back only what it holds. */
        user_charge_release(&c_files, 100);
        assert_int_equal(user_used(c, USER_RESOURCE_FILES), 0);
        assert_int_equal(ur.total[USER_RESOURCE_FILES], 13);

        /* The reserve: of 2 connections in all, other uids get 1, root the last one. */
        assert_int_equal(user_charge(a, &peers[0], 1), 0);
        assert_int_equal(user_charge(b, &peers[1], 1), USER_E_TOTAL);
        assert_int_equal(user_check(&ur, 0, USER_RESOURCE_PEERS, 1), 0);
        assert_int_equal(user_charge(root, &peers[2], 1), 0);
        assert_int_equal(user_charge(root, &peers[2], 1), USER_E_QUOTA);

        /* Deinit gives back all, and the charges' references go with them. */
        user_charge_deinit(&a_jobs);
        user_charge_deinit(&b_jobs);
        user_charge_deinit(&a_files);
        user_charge_deinit(&b_files);
        user_charge_deinit(&c_files);
        for (size_t i = 0; i < ELEMENTSOF(peers); i++)
                user_charge_deinit(&peers[i]);
        for (int r = 0; r < _USER_RESOURCE_MAX; r++)
                assert_int_equal(ur.total[r], 0);
        assert_int_equal(a->n_refs, 1);
        user_unref(a);
        user_unref(b);
        user_unref(c);
        user_unref(root);
        assert_null(ur.users);
        user_registry_done(&ur);
}

/* L3: a total with a reserve: other uids together stop short of it, root alone may use the rest;
 * with the defaults of config.c, two uids at their per-uid maximum leave root its place. */
static void test_root_reserve(void **state)
{
        UserLimit limits[_USER_RESOURCE_MAX] = {
                [USER_RESOURCE_OWNERS] = { .per_uid = 2, .total = 4, .reserve = 1 },
        };
        UserRegistry ur;
        User *a, *b, *c, *root;
        UserCharge ca = USER_CHARGE_INIT(USER_RESOURCE_OWNERS), cb = USER_CHARGE_INIT(USER_RESOURCE_OWNERS),
                   cc = USER_CHARGE_INIT(USER_RESOURCE_OWNERS), cr = USER_CHARGE_INIT(USER_RESOURCE_OWNERS);
        FhashConfig conf = config_defaults();

        (void)state;
        user_registry_init(&ur, limits);
        assert_int_equal(user_registry_ref(&ur, UID_A, &a), 0);
        assert_int_equal(user_registry_ref(&ur, UID_B, &b), 0);
        assert_int_equal(user_registry_ref(&ur, UID_B + 1, &c), 0);
        assert_int_equal(user_registry_ref(&ur, 0, &root), 0);
        assert_int_equal(user_charge(a, &ca, 2), 0);
        assert_int_equal(user_charge(a, &ca, 1), USER_E_QUOTA);
        assert_int_equal(user_charge(b, &cb, 1), 0);
        /* 3 of 4 held: the last one is root's. */
        assert_int_equal(user_charge(c, &cc, 1), USER_E_TOTAL);
        assert_int_equal(user_charge(root, &cr, 1), 0);
        assert_int_equal(user_charge(root, &cr, 1), USER_E_TOTAL);
        user_charge_deinit(&ca);
        user_charge_deinit(&cb);
        user_charge_deinit(&cc);
        user_charge_deinit(&cr);
        user_unref(a);
        user_unref(b);
        user_unref(c);
        user_unref(root);
        user_registry_done(&ur);

        /* The fd budgets: the unit's LimitNOFILE=65536, and a hand-started fhashd's 1024. */
        config_fd_limits(65536, 64, limits);
        assert_int_equal(limits[USER_RESOURCE_FDS].total, 46080);
        assert_int_equal(limits[USER_RESOURCE_FDS].per_uid, 11520);
        assert_int_equal(limits[USER_RESOURCE_FDS].reserve, 5760);
        assert_int_equal(limits[USER_RESOURCE_TRANSIT].total, 7680);
        assert_int_equal(limits[USER_RESOURCE_TRANSIT].per_uid, 1920);
        assert_int_equal(limits[USER_RESOURCE_CLOSING].total, 7680);
        assert_int_equal(limits[USER_RESOURCE_CLOSING].per_uid, 960);
        /* What fhashd keeps for itself, with all three budgets spent, is never less than its own
         * sockets and two messages' fds need. */
        for (uint64_t nofile = 1024; nofile <= (1u << 20); nofile *= 2) {
                uint64_t sum = 0;

                config_fd_limits(nofile, 64, limits);
                sum = limits[USER_RESOURCE_FDS].total + limits[USER_RESOURCE_TRANSIT].total +
                      limits[USER_RESOURCE_CLOSING].total;
                if (nofile >= 16384)
                        assert_true(nofile - sum >= 64 + 5 * PEERS_MAX + 64 + 2 * FDS_PER_MESSAGE_MAX);
                assert_true(sum <= nofile / 2 || nofile - sum >= nofile / 16);
                for (UserResource r = USER_RESOURCE_FDS; r <= USER_RESOURCE_CLOSING; r++)
                        if (r == USER_RESOURCE_FDS || r >= USER_RESOURCE_TRANSIT)
                                assert_true(limits[r].per_uid > 0 && limits[r].total >= limits[r].per_uid);
        }
        /* A hand-started fhashd with 1024 fds: half for itself. */
        config_fd_limits(1024, 64, limits);
        assert_int_equal(limits[USER_RESOURCE_FDS].total + limits[USER_RESOURCE_TRANSIT].total +
                         limits[USER_RESOURCE_CLOSING].total, 512);
        assert_int_equal(limits[USER_RESOURCE_FDS].per_uid, 80);

        config_to_user_limits(&conf, limits);
        for (UserResource r = USER_RESOURCE_OWNERS; r < _USER_RESOURCE_MAX; r++) {
                assert_true(limits[r].reserve > 0);
                assert_true(2 * limits[r].per_uid <= limits[r].total - limits[r].reserve);
        }
}

static void test_registry_lookups(void **state)
{
        const UserLimit limits[_USER_RESOURCE_MAX] = {
                [USER_RESOURCE_JOBS] = { .per_uid = 2000 },
                [USER_RESOURCE_OWNERS] = { .total = 2 },
                [USER_RESOURCE_PEERS] = { .per_uid = 1 },
        };
        enum { N = 3000 };
        Registry reg;
        JobEntry *jobs = calloc(N, sizeof(JobEntry));
        OwnerEntry owners[3] = {};
        PeerEntry peers[3] = {};
        char name[] = ":1.5";
        uint64_t expect[] = { 3, 2 };
        size_t k = 0;

        assert_non_null(jobs);
        registry_init(&reg, limits);

        /* Jobs: ids in order, found by id, listed per uid newest first. The Job pointers are only
         * handed back, never followed. */
        assert_int_equal(registry_add_job(&reg, &jobs[0], (Job *)&jobs[0], 0), 0);
        assert_int_equal(registry_add_job(&reg, &jobs[1], (Job *)&jobs[1], UID_A), 0);
        assert_int_equal(registry_add_job(&reg, &jobs[2], (Job *)&jobs[2], UID_A), 0);
        assert_int_equal(jobs[2].id, 3);
        assert_ptr_equal(registry_find_job(&reg, 2), (Job *)&jobs[1]);
        assert_null(registry_find_job(&reg, 4));
        assert_int_equal(registry_n_jobs_of(&reg, UID_A), 2);
        assert_int_equal(registry_n_jobs_of(&reg, UID_B), 0);
        assert_int_equal(registry_n_jobs_of(&reg, 0), 3);
        REGISTRY_FOREACH_JOB_OF(e, &reg, UID_A)
                assert_int_equal(e->id, expect[k++]); // NOLINT(clang-analyzer-core.CallAndMessage): uthash's iteration macro
        assert_int_equal(k, 2);
        k = 0;
        REGISTRY_FOREACH_JOB_OF(e, &reg, 0)
                assert_int_equal(e->id, 3 - k++);
        assert_int_equal(k, 3);
        REGISTRY_FOREACH_JOB_OF(e, &reg, UID_B)
                fail();

        /* A finished job holds no job charge and leaves the active list, but can still be found. */
        assert_int_equal(used(&reg, UID_A, USER_RESOURCE_JOBS), 2);
        registry_job_finished(&reg, &jobs[1]);
        registry_job_finished(&reg, &jobs[1]);
        assert_int_equal(used(&reg, UID_A, USER_RESOURCE_JOBS), 1);
        assert_int_equal(registry_n_active_jobs(&reg), 2);
        assert_ptr_equal(registry_find_job(&reg, 2), (Job *)&jobs[1]);
        k = 0;
        REGISTRY_FOREACH_ACTIVE_JOB(e, next, &reg) {
                assert_true(e->id != 2);
                k++;
        }
        assert_int_equal(k, 2);
        registry_remove_job(&reg, &jobs[1]);
        registry_remove_job(&reg, &jobs[1]);
        assert_null(registry_find_job(&reg, 2));
        assert_int_equal(registry_n_jobs_of(&reg, UID_A), 1);

        /* Many more, through the table's growth; the per-uid limit refuses the 2001st and leaves
         * its entry untouched. */
        for (size_t i = 3; i < N; i++) {
                int r = registry_add_job(&reg, &jobs[i], (Job *)&jobs[i], UID_B);

                if (i < 2003)
                        assert_int_equal(r, 0);
                else {
                        assert_int_equal(r, USER_E_QUOTA);
                        assert_null(jobs[i].job);
                }
        }
        assert_int_equal(registry_n_jobs(&reg), 2002);
        for (size_t i = 3; i < 2003; i++)
                assert_ptr_equal(registry_find_job(&reg, jobs[i].id), (Job *)&jobs[i]);
        for (size_t i = 0; i < N; i++)
                registry_remove_job(&reg, &jobs[i]);

        /* Owners by name (the key's bytes, not its pointer); the third owner passes the total. */
        assert_int_equal(registry_add_owner(&reg, &owners[0], (Owner *)&owners[0], ":1.5", UID_A), 0);
        assert_ptr_equal(registry_find_owner(&reg, name), &owners[0]);
        assert_int_equal(registry_find_owner(&reg, name)->uid, UID_A);
        assert_int_equal(registry_add_owner(&reg, &owners[1], (Owner *)&owners[1], ":1.5", UID_A), -EEXIST);
        assert_int_equal(registry_add_owner(&reg, &owners[1], (Owner *)&owners[1], ":1.6", UID_B), 0);
        assert_int_equal(registry_add_owner(&reg, &owners[2], (Owner *)&owners[2], ":1.7", 0), USER_E_TOTAL);
        assert_int_equal(registry_n_owners(&reg), 2);
        assert_int_equal(used(&reg, UID_B, USER_RESOURCE_OWNERS), 1);
        registry_remove_owner(&reg, &owners[0]);
        assert_null(registry_find_owner(&reg, ":1.5"));
        assert_int_equal(registry_add_owner(&reg, &owners[2], (Owner *)&owners[2], ":1.7", 0), 0);
        registry_remove_owner(&reg, &owners[1]);
        registry_remove_owner(&reg, &owners[2]);

        /* Peers by their bus, which the registry never follows either. */
        assert_int_equal(registry_add_peer(&reg, &peers[0], (Peer *)&peers[0], (sd_bus *)&peers[0], "a/direct/1", UID_A), 0);
        assert_int_equal(registry_add_peer(&reg, &peers[1], (Peer *)&peers[1], (sd_bus *)&peers[1], "a/direct/2", UID_A),
                         USER_E_QUOTA);
        assert_int_equal(registry_add_peer(&reg, &peers[1], (Peer *)&peers[1], (sd_bus *)&peers[1], "b/direct/3", UID_B), 0);
        assert_ptr_equal(registry_find_peer(&reg, (sd_bus *)&peers[1])->peer, (Peer *)&peers[1]);
        assert_string_equal(registry_find_peer(&reg, (sd_bus *)&peers[0])->name, "a/direct/1");
        assert_null(registry_find_peer(&reg, (sd_bus *)&peers[2]));
        assert_int_equal(registry_n_peers(&reg), 2);
        registry_remove_peer(&reg, &peers[0]);
        registry_remove_peer(&reg, &peers[1]);

        assert_registry_empty(&reg);
        registry_done(&reg);
        free(jobs);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_user_charges),
                cmocka_unit_test(test_root_reserve),
                cmocka_unit_test(test_registry_lookups),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
