/* SPDX-License-Identifier: MIT */
/* test-closer.c: fds closed by processes that share our fd table, each close reported when it ended */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "basic/macro.h"
#include "io/closer.h"

typedef struct Done {
        unsigned closed, given_back;
        uint64_t last_tag;
        int fd;
} Done;

static void on_done(uint64_t tag, bool closed, int fd, void *userdata)
{
        Done *d = userdata;

        d->last_tag = tag;
        if (closed)
                d->closed++;
        else {
                d->given_back++;
                d->fd = fd;
        }
}

static uint64_t now_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Waits for the reports (and a death) until want closes were reported or ms passed. */
static void dispatch_until(Closer *c, Done *d, unsigned want, int ms)
{
        uint64_t end = now_ms() + (uint64_t)ms;

        while (d->closed + d->given_back < want && now_ms() < end) {
                struct pollfd p[2] = { { .fd = closer_get_report_fd(c), .events = POLLIN },
                                       { .fd = closer_get_pidfd(c), .events = POLLIN } };

                (void)poll(p, closer_get_pidfd(c) >= 0 ? 2 : 1, 50);
                assert_true(closer_dispatch(c, on_done, d) >= 0);
        }
}

/* A pipe's write end, closed by the closer: its read end here sees the end of the stream. */
static void close_pipe_end(Closer *c, Done *d, uint64_t tag)
{
        struct pollfd pf;
        unsigned before = d->closed;
        int p[2];
        char b;

        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        assert_int_equal(closer_submit(c, p[1], tag), 0);
        pf = (struct pollfd){ .fd = p[0], .events = POLLIN };
        assert_int_equal(poll(&pf, 1, 5000), 1);
        assert_int_equal(read(p[0], &b, 1), 0);
        close(p[0]);
        dispatch_until(c, d, before + 1, 5000);
        assert_int_equal(d->closed, before + 1);
        assert_int_equal(d->last_tag, tag);
}

static void test_close(void **state)
{
        _cleanup_(closer_freep) Closer *c = NULL;
        Done d = {};
        int pid;

        (void)state;
        assert_int_equal(closer_new(&c), 0);
        pid = closer_pid(c);
        assert_true(pid > 0 && pid != getpid());
        for (uint64_t t = 1; t <= 3; t++)
                close_pipe_end(c, &d, t);
        assert_int_equal(closer_in_flight(c), 0);
        assert_int_equal(closer_submit(c, -1, 9), -EBADF);

        /* Killed, it is made again, on the same pipes, and goes on. */
        assert_int_equal(kill(pid, SIGKILL), 0);
        dispatch_until(c, &d, 1000, 300);
        assert_true(closer_pid(c) != pid);
        close_pipe_end(c, &d, 4);
        assert_int_equal(d.given_back, 0);

        /* Freed, it exits. */
        pid = closer_pid(c);
        c = closer_free(c);
        for (int i = 0; i < 500 && kill(pid, 0) == 0; i++) {
                (void)waitpid(pid, NULL, WNOHANG);
                usleep(10000);
        }
        assert_int_equal(kill(pid, 0), -1);
}

/* A TCP socket with unsent data and SO_LINGER: its close waits up to the linger time, as a close of
 * a FUSE fd waits for its server. The listener never accepts, so nothing is read. */
static int lingering_socket(int listener, int seconds)
{
        struct sockaddr_in a;
        socklen_t l = sizeof(a);
        struct linger lg = { .l_onoff = 1, .l_linger = seconds };
        char junk[65536] = {};
        int s;

        assert_int_equal(getsockname(listener, (struct sockaddr *)&a, &l), 0);
        s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(s >= 0);
        assert_int_equal(setsockopt(s, SOL_SOCKET, SO_SNDBUF, &(int){ 4096 }, sizeof(int)), 0);
        assert_int_equal(connect(s, (struct sockaddr *)&a, l), 0);
        assert_int_equal(setsockopt(s, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)), 0);
        assert_int_equal(fcntl(s, F_SETFL, O_NONBLOCK), 0);
        while (send(s, junk, sizeof(junk), MSG_NOSIGNAL) > 0)
                ;
        assert_int_equal(fcntl(s, F_SETFL, 0), 0);
        return s;
}

/* Closes that wait hold their children, never us: each is in flight until it ends, past
 * CLOSER_CHILDREN_MAX the closer says -EBUSY, and a quick close beside the slow ones is reported at
 * once. */
static void test_slow_closes(void **state)
{
        _cleanup_(closer_freep) Closer *c = NULL;
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        int listener, n_slow = 4, fds[4];
        uint64_t t0, t1;
        Done d = {};

        (void)state;
        listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(listener >= 0);
        assert_int_equal(setsockopt(listener, SOL_SOCKET, SO_RCVBUF, &(int){ 4096 }, sizeof(int)), 0);
        assert_int_equal(bind(listener, (struct sockaddr *)&a, sizeof(a)), 0);
        assert_int_equal(listen(listener, 128), 0);
        for (int i = 0; i < n_slow; i++)
                fds[i] = lingering_socket(listener, 2);

        assert_int_equal(closer_new(&c), 0);
        t0 = now_ms();
        for (int i = 0; i < n_slow; i++)
                assert_int_equal(closer_submit(c, fds[i], 100 + (uint64_t)i), 0);
        /* We never waited on them. */
        assert_true(now_ms() - t0 < 500);
        assert_int_equal(closer_in_flight(c), (unsigned)n_slow);
        close_pipe_end(c, &d, 7);
        assert_int_equal(closer_in_flight(c), (unsigned)n_slow);
        dispatch_until(c, &d, 1 + (unsigned)n_slow, 10000);
        t1 = now_ms();
        assert_int_equal(d.closed, 1 + (unsigned)n_slow);
        assert_int_equal(closer_in_flight(c), 0);
        /* Reported when they ended, not before. */
        assert_true(t1 - t0 >= 1500);

        /* The bound. */
        for (unsigned i = 0; i < CLOSER_CHILDREN_MAX; i++)
                assert_int_equal(closer_submit(c, lingering_socket(listener, 1), i), 0);
        int extra = lingering_socket(listener, 1);
        assert_int_equal(closer_submit(c, extra, 999), -EBUSY);
        close(extra); /* ours again, it waits here: the linger is short */
        dispatch_until(c, &d, d.closed + CLOSER_CHILDREN_MAX, 20000);
        assert_int_equal(closer_in_flight(c), 0);
        close(listener);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_close),
                cmocka_unit_test(test_slow_closes),
        };

        signal(SIGPIPE, SIG_IGN);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
