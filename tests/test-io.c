/* SPDX-License-Identifier: MIT */
/* test-io.c: the io layer alone: the SPSC queue and the parker between two real threads (millions of
 * items; the TSan build runs it), the buffer pool's free lists, each ring backend on real files, and
 * the SIGBUS guard on a file truncated under its mapping */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "basic/macro.h"
#include "basic/time-util.h"
#include "io/ioring.h"
#include "io/mapguard.h"
#include "io/pool.h"
#include "io/queue.h"
#include "test-helpers.h"

/* ---- the queue and the parker ------------------------------------------------------------------ */

#define QUEUE_ITEMS 2000000ULL

typedef struct Item {
        uint64_t seq;
        uint64_t check;  /* derived from seq: a torn or stale element shows */
} Item;

typedef struct Pair {
        SpscQueue q;
        Parker consumer;  /* the consumer sleeps here when the queue is empty */
        _Atomic uint64_t producer_full;  /* times the producer found the queue full */
} Pair;

static uint64_t check_of(uint64_t seq)
{
        return seq * 0x9e3779b97f4a7c15ULL ^ (seq >> 7);
}

static void *producer(void *userdata)
{
        Pair *p = userdata;

        for (uint64_t i = 0; i < QUEUE_ITEMS; i++) {
                Item it = { .seq = i, .check = check_of(i) };

                while (!spsc_queue_push(&p->q, &it)) {
                        atomic_fetch_add_explicit(&p->producer_full, 1, memory_order_relaxed);
                        parker_wake(&p->consumer);
                        sched_yield();
                }
                /* Every 64 items, as the engine's shards wake their consumer in batches. */
                if ((i & 63) == 63)
                        parker_wake(&p->consumer);
        }
        parker_wake(&p->consumer);
        return NULL;
}

/* One producer, one consumer, a small ring (so that both "full" and "empty" happen often), the
 * consumer parking whenever it runs dry: every item arrives once, in order, whole. */
static void test_queue_two_threads(void **state)
{
        Pair p = {};
        pthread_t t;
        uint64_t next = 0, parks = 0;
        Item it;

        assert_int_equal(spsc_queue_init(&p.q, 1000, sizeof(Item)), 0);
        assert_int_equal(p.q.mask, 1023);  /* rounded up to a power of two */
        assert_false(spsc_queue_pop(&p.q, &it));
        assert_true(spsc_queue_empty(&p.q));
        assert_int_equal(pthread_create(&t, NULL, producer, &p), 0);
        while (next < QUEUE_ITEMS) {
                if (!spsc_queue_pop(&p.q, &it)) {
                        /* Announce, look again, then sleep: a push between the two is not lost. */
                        parker_prepare(&p.consumer);
                        if (!spsc_queue_empty(&p.q)) {
                                parker_cancel(&p.consumer);
                                continue;
                        }
                        parker_park(&p.consumer);
                        parks++;
                        continue;
                }
                if (it.seq != next || it.check != check_of(next))
                        fail_msg("item %" PRIu64 ": got seq %" PRIu64 " check %" PRIx64, next, it.seq, it.check);
                next++;
        }
        assert_int_equal(pthread_join(t, NULL), 0);
        assert_false(spsc_queue_pop(&p.q, &it));
        print_message("%llu items; the consumer parked %" PRIu64 " times, the producer found it full %" PRIu64
                      " times\n", QUEUE_ITEMS, parks, atomic_load(&p.producer_full));
        spsc_queue_deinit(&p.q);
}

static void test_queue_edges(void **state)
{
        SpscQueue q;
        uint32_t v;

        assert_int_equal(spsc_queue_init(&q, 0, 4), -EINVAL);
        assert_int_equal(spsc_queue_init(&q, 4, 0), -EINVAL);
        assert_int_equal(spsc_queue_init(&q, 3, sizeof(v)), 0);
        for (v = 0; v < 4; v++)
                assert_true(spsc_queue_push(&q, &v));
        assert_false(spsc_queue_push(&q, &v));  /* full is back-pressure, not an error */
        for (uint32_t k = 0; k < 4; k++) {
                assert_true(spsc_queue_pop(&q, &v));
                assert_int_equal(v, k);
        }
        assert_false(spsc_queue_pop(&q, &v));
        spsc_queue_deinit(&q);
}

/* ---- the pool ------------------------------------------------------------------------------------ */

static void test_pool(void **state)
{
        Pool p;
        unsigned first, got[70];
        struct iovec *iov = NULL;
        unsigned n_iov;

        assert_int_equal(pool_init(&p, 0, 0, 0, 0), -EINVAL);
        assert_int_equal(pool_init(&p, 64 * 1024, 70, 4096, 3), 0);
        /* Lowest index first, each slot once, in its own memory. */
        for (unsigned i = 0; i < 70; i++) {
                int k = pool_get(&p);

                assert_int_equal(k, (int)i);
                got[i] = (unsigned)k;
                memset(pool_data(&p, got[i]), (int)i, p.slot_size);
        }
        assert_int_equal(pool_get(&p), -ENOBUFS);
        for (unsigned i = 0; i < 70; i++)
                assert_int_equal(pool_data(&p, i)[p.slot_size - 1], (uint8_t)i);
        /* Small slots: after the pool proper, first in memory first, a stack. */
        assert_int_equal(pool_get_small(&p), 70);
        assert_int_equal(pool_get_small(&p), 71);
        assert_int_equal(pool_get_small(&p), 72);
        assert_int_equal(pool_get_small(&p), -ENOBUFS);
        assert_true(pool_is_small(&p, 71));
        assert_ptr_equal(pool_data(&p, 71), p.mem + 70 * p.slot_size + 4096);
        pool_put(&p, 71);
        assert_int_equal(pool_get_small(&p), 71);
        /* Slots given back are reused lowest first; runs of adjacent free slots, across a word. */
        pool_put(&p, 40);
        pool_put(&p, 3);
        assert_int_equal(pool_get(&p), 3);
        for (unsigned i = 60; i < 68; i++)
                pool_put(&p, i);
        assert_int_equal(pool_find_run(&p, 4, &first), 4);
        assert_int_equal(first, 60);
        assert_int_equal(pool_find_run(&p, 20, &first), 8);  /* the longest shorter one */
        assert_int_equal(first, 60);
        pool_take(&p, 40);
        assert_false(pool_slot_is_free(&p, 40));
        assert_true(pool_slot_is_free(&p, 61));
        /* One registered buffer for the whole mapping. */
        assert_int_equal(pool_iovecs(&p, &iov, &n_iov), 1);
        assert_int_equal(n_iov, 1);
        assert_ptr_equal(iov[0].iov_base, p.mem);
        assert_int_equal(iov[0].iov_len, p.mem_size);
        free(iov);
        pool_deinit(&p);
}

/* ---- the ring backends --------------------------------------------------------------------------- */

/* Waits for and reaps the completion with tag (others are not expected). */
static int complete(IoRing *r, uint64_t tag)
{
        IoCompletion c;
        uint64_t deadline = now_usec() + 10 * 1000000ULL;

        for (;;) {
                assert_int_equal(ioring_wait(r, 100000), 0);
                if (ioring_reap(r, &c, 1) == 1) {
                        assert_int_equal(c.tag, tag);
                        return c.res;
                }
                assert_true(now_usec() < deadline);
        }
}

static void *write_eventfd_later(void *userdata)
{
        int fd = *(int *)userdata;
        uint64_t one = 1;

        usleep(50000);
        assert_int_equal(write(fd, &one, sizeof(one)), sizeof(one));
        return NULL;
}

/* Each mode on a real file: open, statx, read into a pool slot (registered in that mode), a read
 * past the end, a bad fd, close; a poll that completes when an eventfd is written; the wake eventfd
 * ending a wait; a wait that times out. */
static void ring_mode(IoMode mode)
{
        _cleanup_free_ char *dir = th_mkdtemp("io-ring"), *path = NULL;
        _cleanup_close_ int wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK), ev = eventfd(0, EFD_CLOEXEC);
        uint8_t *want = malloc(100000);
        struct statx stx = {};
        struct iovec *iov = NULL;
        unsigned n_iov;
        IoRing *r = NULL;
        pthread_t t;
        uint64_t t0;
        Pool p;
        int fd, k;

        assert_non_null(dir);
        assert_true(asprintf(&path, "%s/f", dir) > 0);
        assert_int_equal(th_write_random_file(path, 100000, 9), 0);
        th_fill_random(want, 100000, 9);
        assert_int_equal(pool_init(&p, 128 * 1024, 2, 0, 0), 0);
        assert_true(pool_iovecs(&p, &iov, &n_iov) >= 0);
        k = ioring_new(mode, 8, iov, n_iov, wake, &r);
        free(iov);
        if (k == -ENOSYS || k == -EPERM || k == -EOPNOTSUPP || (k == -ENOMEM && mode == IO_MODE_URING_REGISTERED)) {
                pool_deinit(&p);
                th_rm_rf(dir);
                free(want);
                print_message("io mode %s is not available here: %s\n", io_mode_to_string(mode), strerror(-k));
                skip();
        }
        assert_int_equal(k, 0);
        assert_int_equal(ioring_get_mode(r), mode);

        ioring_openat(r, path, O_RDONLY | O_CLOEXEC, 1);
        assert_int_equal(ioring_in_flight(r), 1);
        assert_int_equal(ioring_submit(r, false), 0);
        fd = complete(r, 1);
        assert_true(fd >= 0);
        ioring_statx(r, fd, STATX_SIZE | STATX_TYPE, &stx, 2);
        assert_int_equal(complete(r, 2), 0);
        assert_int_equal(stx.stx_size, 100000);
        ioring_read(r, fd, pool_data(&p, 1), 128 * 1024, 0, mode == IO_MODE_URING_REGISTERED ? 0 : -1, 0, 3);
        assert_int_equal(complete(r, 3), 100000);
        assert_memory_equal(pool_data(&p, 1), want, 100000);
        ioring_read(r, fd, pool_data(&p, 0), 4096, 100000, mode == IO_MODE_URING_REGISTERED ? 0 : -1, 0, 4);
        assert_int_equal(complete(r, 4), 0);  /* at the end: nothing, no error */
        ioring_read(r, 1000000, pool_data(&p, 0), 4096, 0, -1, 0, 5);
        assert_int_equal(complete(r, 5), -EBADF);
        ioring_close(r, fd, 6);
        assert_int_equal(complete(r, 6), 0);
        assert_int_equal(fcntl(fd, F_GETFD), -1);
        assert_int_equal(ioring_in_flight(r), 0);

        /* A poll completes with the events once another thread writes the eventfd. */
        ioring_poll(r, ev, POLLIN, 7);
        assert_int_equal(ioring_submit(r, false), 0);
        assert_int_equal(pthread_create(&t, NULL, write_eventfd_later, &ev), 0);
        assert_true(complete(r, 7) & POLLIN);
        assert_int_equal(pthread_join(t, NULL), 0);
        /* The wake eventfd ends a wait with nothing to complete ... */
        assert_int_equal(pthread_create(&t, NULL, write_eventfd_later, &wake), 0);
        t0 = now_usec();
        assert_int_equal(ioring_wait(r, 5 * 1000000ULL), 0);
        assert_true(now_usec() - t0 < 4 * 1000000ULL);
        assert_int_equal(pthread_join(t, NULL), 0);
        /* ... and a wait without anything to wake it returns after its timeout. */
        t0 = now_usec();
        assert_int_equal(ioring_wait(r, 20000), 0);
        assert_true(now_usec() - t0 < 4 * 1000000ULL);
        assert_int_equal(ioring_reap(r, &(IoCompletion){}, 1), 0);

        ioring_free(r);
        pool_deinit(&p);
        th_rm_rf(dir);
        free(want);
}

/* A buffer left empty at start and registered when first needed (the engine's pool proper): a
 * READ_FIXED into it reads the file once it is registered; the other backends say they have no
 * registered buffers. */
static void test_ring_register_later(void **state)
{
        _cleanup_free_ char *dir = th_mkdtemp("io-ring-later"), *path = NULL;
        _cleanup_close_ int wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        uint8_t *want = malloc(100000);
        IoRing *r = NULL;
        Pool p;
        int fd, k;

        assert_non_null(dir);
        assert_non_null(want);
        assert_true(asprintf(&path, "%s/f", dir) > 0);
        assert_int_equal(th_write_random_file(path, 100000, 5), 0);
        th_fill_random(want, 100000, 5);
        assert_int_equal(pool_init(&p, 128 * 1024, 1, 4096, 1), 0);
        struct iovec iov[2] = { {}, { .iov_base = pool_data(&p, 1), .iov_len = 4096 } };
        struct iovec later = { .iov_base = pool_data(&p, 0), .iov_len = 128 * 1024 };

        k = ioring_new(IO_MODE_URING_REGISTERED, 8, iov, 2, wake, &r);
        if (k == -ENOSYS || k == -EPERM || k == -EOPNOTSUPP || k == -ENOMEM) {
                pool_deinit(&p);
                th_rm_rf(dir);
                free(want);
                print_message("registered io_uring buffers are not available here: %s\n", strerror(-k));
                skip();
        }
        assert_int_equal(k, 0);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        /* The registered small buffer reads at once. */
        ioring_read(r, fd, pool_data(&p, 1), 4096, 0, 1, 0, 1);
        assert_int_equal(ioring_submit(r, false), 0);
        assert_int_equal(complete(r, 1), 4096);
        assert_memory_equal(pool_data(&p, 1), want, 4096);
        /* The empty entry is refused until it is registered ... */
        ioring_read(r, fd, pool_data(&p, 0), 128 * 1024, 0, 0, 0, 2);
        assert_int_equal(ioring_submit(r, false), 0);
        assert_true(complete(r, 2) < 0);
        /* ... and reads the whole file once it is. */
        assert_int_equal(ioring_register_buffer(r, 0, &later), 0);
        ioring_read(r, fd, pool_data(&p, 0), 128 * 1024, 0, 0, 0, 3);
        assert_int_equal(ioring_submit(r, false), 0);
        assert_int_equal(complete(r, 3), 100000);
        assert_memory_equal(pool_data(&p, 0), want, 100000);
        ioring_free(r);

        assert_int_equal(ioring_new(IO_MODE_URING, 8, iov, 2, wake, &r), 0);
        assert_int_equal(ioring_register_buffer(r, 0, &later), -EOPNOTSUPP);
        ioring_free(r);
        assert_int_equal(ioring_new(IO_MODE_PREAD, 8, iov, 2, wake, &r), 0);
        assert_int_equal(ioring_register_buffer(r, 0, &later), -EOPNOTSUPP);
        ioring_free(r);
        close(fd);
        pool_deinit(&p);
        th_rm_rf(dir);
        free(want);
}

static void test_ring_registered(void **state)
{
        ring_mode(IO_MODE_URING_REGISTERED);
}

static void test_ring_uring(void **state)
{
        ring_mode(IO_MODE_URING);
}

static void test_ring_pread(void **state)
{
        ring_mode(IO_MODE_PREAD);
}

/* ---- the SIGBUS guard ---------------------------------------------------------------------------- */

typedef struct Sum {
        const uint8_t *p;
        size_t len;
        /* Stored at every byte: the read that faults is cut short by a longjmp. */
        volatile uint64_t sum;
        volatile size_t done;
} Sum;

static void sum_bytes(void *userdata)
{
        Sum *s = userdata;

        for (s->done = 0; s->done < s->len; s->done++)
                s->sum += s->p[s->done];
}

/* A mapping read within the file's end works; after the file shrinks under it, a guarded read past
 * the new end is -EFAULT for that read, and the process lives on. */
static void test_mapguard(void **state)
{
        _cleanup_free_ char *dir = th_mkdtemp("io-mapguard"), *path = NULL;
        _cleanup_close_ int fd = -EBADF;
        const size_t size = 64 * 1024;
        uint8_t *m;
        Sum s;

        assert_non_null(dir);
        assert_true(asprintf(&path, "%s/f", dir) > 0);
        assert_int_equal(th_write_random_file(path, size, 5), 0);
        fd = open(path, O_RDWR | O_CLOEXEC);
        assert_true(fd >= 0);
        m = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
        assert_true(m != MAP_FAILED);
        assert_int_equal(mapguard_install(), 0);
        assert_int_equal(mapguard_install(), 0);  /* again: a no-op */

        s = (Sum){ .p = m, .len = size };
        assert_int_equal(mapguard_run(m, size, sum_bytes, &s), 0);
        assert_int_equal(s.done, size);

        assert_int_equal(ftruncate(fd, 4096), 0);
        s = (Sum){ .p = m, .len = size };
        assert_int_equal(mapguard_run(m, size, sum_bytes, &s), -EFAULT);
        /* Interrupted at the first page past the new end, not before it. */
        assert_int_equal(s.done, 4096);
        /* The first page is still there, and the guard is ready for the next file. */
        s = (Sum){ .p = m, .len = 4096 };
        assert_int_equal(mapguard_run(m, 4096, sum_bytes, &s), 0);
        assert_int_equal(munmap(m, size), 0);
        th_rm_rf(dir);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_queue_two_threads),
                cmocka_unit_test(test_queue_edges),
                cmocka_unit_test(test_pool),
                cmocka_unit_test(test_ring_registered),
                cmocka_unit_test(test_ring_uring),
                cmocka_unit_test(test_ring_pread),
                cmocka_unit_test(test_ring_register_later),
                cmocka_unit_test(test_mapguard),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
