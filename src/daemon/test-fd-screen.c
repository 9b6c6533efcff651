/* SPDX-License-Identifier: MIT */
/* test-fd-screen.c: fds taken from received messages before sd-bus holds them, closed elsewhere */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-id128.h>
#include <unistd.h>

#include <cmocka.h>

#include "basic/macro.h"
#include "daemon/fd-screen.h"
#include "io/closer.h"

/* How many of this process's fds are open on the file with st's device and inode. */
static int count_open(const struct stat *st)
{
        DIR *d = opendir("/proc/self/fd");
        struct dirent *e;
        int n = 0;

        assert_non_null(d);
        while ((e = readdir(d))) {
                struct stat s;

                if (e->d_name[0] == '.' || fstat((int)strtol(e->d_name, NULL, 10), &s) < 0)
                        continue;
                if (s.st_dev == st->st_dev && s.st_ino == st->st_ino)
                        n++;
        }
        closedir(d);
        return n;
}

static bool wait_open(const struct stat *st, int want)
{
        for (int i = 0; i < 500; i++) {
                if (count_open(st) == want)
                        return true;
                usleep(10000);
        }
        return false;
}

static int tmp_file(struct stat *st)
{
        int fd = open("/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);

        assert_true(fd >= 0);
        assert_int_equal(write(fd, "x", 1), 1);
        assert_int_equal(fstat(fd, st), 0);
        return fd;
}

/* The closer closes what it is given in another process, in our fd table: a pipe's write end, once
 * closed there, gives its read end here the end of the stream. */
static void test_closer(void **state)
{
        Closer *c = NULL;
        int p[2], pid;
        char b;

        (void)state;
        assert_int_equal(closer_new(&c), 0);
        pid = closer_pid(c);
        assert_true(pid > 0 && pid != getpid());
        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        assert_int_equal(closer_close(c, p[1]), 0);
        struct pollfd pf = { .fd = p[0], .events = POLLIN };
        assert_int_equal(poll(&pf, 1, 5000), 1);
        assert_int_equal(read(p[0], &b, 1), 0);
        close(p[0]);

        /* Killed, it is made again for the next fd. */
        assert_int_equal(kill(pid, SIGKILL), 0);
        usleep(100000);
        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        assert_int_equal(closer_close(c, p[1]), 0);
        assert_true(closer_pid(c) != pid);
        assert_int_equal(poll(&pf, 1, 0) >= 0, 1);
        pf.fd = p[0];
        assert_int_equal(poll(&pf, 1, 5000), 1);
        assert_int_equal(read(p[0], &b, 1), 0);
        close(p[0]);

        /* Freed, it closes what it holds and exits. */
        pid = closer_pid(c);
        closer_free(c);
        for (int i = 0; i < 500 && kill(pid, 0) == 0; i++) {
                (void)waitpid(pid, NULL, WNOHANG);
                usleep(10000);
        }
        assert_int_equal(kill(pid, 0), -1);
}

static ssize_t send_fds(int sock, const int *fds, size_t n)
{
        union {
                struct cmsghdr h;
                uint8_t buf[CMSG_SPACE(sizeof(int) * 4)];
        } control = {};
        char x = 'x';
        struct iovec iov = { .iov_base = &x, .iov_len = 1 };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &control,
                             .msg_controllen = CMSG_SPACE(sizeof(int) * n) };
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);

        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * n);
        memcpy(CMSG_DATA(c), fds, sizeof(int) * n);
        return sendmsg(sock, &mh, MSG_NOSIGNAL);
}

static size_t recv_fds(int sock, int *fds, size_t max)
{
        union {
                struct cmsghdr h;
                uint8_t buf[CMSG_SPACE(sizeof(int) * 4)];
        } control = {};
        char x;
        struct iovec iov = { .iov_base = &x, .iov_len = 1 };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &control,
                             .msg_controllen = sizeof(control) };
        size_t n = 0;

        assert_int_equal(recvmsg(sock, &mh, MSG_CMSG_CLOEXEC), 1);
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
                if (c->cmsg_type == SCM_RIGHTS) {
                        n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                        assert_true(n <= max);
                        memcpy(fds, CMSG_DATA(c), n * sizeof(int));
                }
        return n;
}

/* This process's recvmsg() is the screen's: the refused file's fd is replaced by a stand-in, and
 * the received copy is closed by the closer; the other fds arrive as they were sent. */
static void test_recvmsg(void **state)
{
        FdScreen *s = NULL;
        struct stat bad_st, good_st, st;
        int sp[2], bad, good, got[4] = { -1, -1, -1, -1 };

        (void)state;
        assert_int_equal(fd_screen_new(&s), 0);
        bad = tmp_file(&bad_st);
        good = tmp_file(&good_st);
        fd_screen_refuse_for_test(s, bad_st.st_dev, bad_st.st_ino);
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);

        /* Not installed: nothing is screened. */
        assert_int_equal(send_fds(sp[0], (int[]){ bad, good }, 2), 1);
        assert_int_equal(recv_fds(sp[1], got, 4), 2);
        assert_null(fd_screen_refusal(got[0]));
        assert_int_equal(fstat(got[0], &st), 0);
        assert_true(st.st_ino == bad_st.st_ino);
        close(got[0]);
        close(got[1]);
        assert_int_equal(fd_screen_taken(s), 0);

        fd_screen_install(s);
        assert_int_equal(send_fds(sp[0], (int[]){ good, bad, good }, 3), 1);
        assert_int_equal(recv_fds(sp[1], got, 4), 3);
        assert_null(fd_screen_refusal(got[0]));
        assert_string_equal(fd_screen_refusal(got[1]) ? "refused" : "kept", "refused");
        assert_non_null(strstr(fd_screen_refusal(got[1]), "cannot tell"));
        assert_int_equal(fcntl(got[1], F_GETFL) & O_ACCMODE, O_WRONLY);
        assert_true(fcntl(got[1], F_GETFD) & FD_CLOEXEC);
        assert_int_equal(fstat(got[2], &st), 0);
        assert_true(st.st_ino == good_st.st_ino);
        assert_int_equal(fd_screen_taken(s), 1);
        /* The copy received is gone from our table; ours stays. */
        assert_true(wait_open(&bad_st, 1));
        for (size_t i = 0; i < 3; i++)
                close(got[i]);

        /* A socket a peer gate writes to, whose fds were screened as the gate read them: not again.
         * Forgotten, it is screened again. */
        uint64_t token = fd_screen_trust_socket(sp[1]);
        assert_true(token != 0);
        assert_int_equal(send_fds(sp[0], (int[]){ bad }, 1), 1);
        assert_int_equal(recv_fds(sp[1], got, 4), 1);
        assert_null(fd_screen_refusal(got[0]));
        close(got[0]);
        fd_screen_forget_socket(token);
        assert_int_equal(send_fds(sp[0], (int[]){ bad }, 1), 1);
        assert_int_equal(recv_fds(sp[1], got, 4), 1);
        assert_non_null(fd_screen_refusal(got[0]));
        close(got[0]);
        assert_int_equal(fd_screen_taken(s), 2);

        fd_screen_install(NULL);
        fd_screen_free(s);
        close(sp[0]);
        close(sp[1]);
        close(bad);
        close(good);
}

static int on_message(sd_bus_message *m, void *userdata, sd_bus_error *error)
{
        int *fds = userdata;

        if (sd_bus_message_is_signal(m, "org.fhash.Test", "Fds") > 0)
                assert_int_equal(sd_bus_message_read(m, "hh", &fds[0], &fds[1]), 1);
        if (fds[0] >= 0) {
                fds[0] = fcntl(fds[0], F_DUPFD_CLOEXEC, 3);
                fds[1] = fcntl(fds[1], F_DUPFD_CLOEXEC, 3);
        }
        return 0;
}

/* sd-bus's own reads come to the screen too (libsystemd calls the recvmsg() fhashd defines): a
 * message's refused fd reaches the handler as a stand-in, and is closed elsewhere. */
static void test_sd_bus(void **state)
{
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *server = NULL, *client = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        FdScreen *s = NULL;
        struct stat bad_st, good_st, st;
        int sp[2], bad, good, got[2] = { -1, -1 };
        sd_id128_t id;

        (void)state;
        assert_int_equal(fd_screen_new(&s), 0);
        fd_screen_install(s);
        bad = tmp_file(&bad_st);
        good = tmp_file(&good_st);
        fd_screen_refuse_for_test(s, bad_st.st_dev, bad_st.st_ino);
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
        assert_int_equal(sd_id128_randomize(&id), 0);
        assert_int_equal(sd_bus_new(&server), 0);
        assert_int_equal(sd_bus_set_fd(server, sp[0], sp[0]), 0);
        assert_int_equal(sd_bus_set_server(server, 1, id), 0);
        assert_int_equal(sd_bus_negotiate_fds(server, 1), 0);
        assert_int_equal(sd_bus_add_filter(server, NULL, on_message, got), 0);
        assert_int_equal(sd_bus_start(server), 0);
        assert_int_equal(sd_bus_new(&client), 0);
        assert_int_equal(sd_bus_set_fd(client, sp[1], sp[1]), 0);
        assert_int_equal(sd_bus_negotiate_fds(client, 1), 0);
        assert_int_equal(sd_bus_start(client), 0);
        for (int i = 0; i < 1000 && (sd_bus_is_ready(client) <= 0 || sd_bus_is_ready(server) <= 0); i++) {
                (void)sd_bus_process(client, NULL);
                (void)sd_bus_process(server, NULL);
                usleep(1000);
        }
        assert_true(sd_bus_can_send(client, SD_BUS_TYPE_UNIX_FD) > 0);
        assert_int_equal(sd_bus_message_new_signal(client, &m, "/", "org.fhash.Test", "Fds"), 0);
        assert_true(sd_bus_message_append(m, "hh", bad, good) >= 0);
        assert_true(sd_bus_send(client, m, NULL) >= 0);
        m = sd_bus_message_unref(m); /* its dups of the fds go once it is written */
        for (int i = 0; i < 1000 && got[0] < 0; i++) {
                (void)sd_bus_process(client, NULL);
                (void)sd_bus_process(server, NULL);
                usleep(1000);
        }
        assert_true(got[0] >= 0 && got[1] >= 0);
        assert_non_null(fd_screen_refusal(got[0]));
        assert_null(fd_screen_refusal(got[1]));
        assert_int_equal(fstat(got[1], &st), 0);
        assert_true(st.st_ino == good_st.st_ino);
        assert_int_equal(fd_screen_taken(s), 1);
        /* The message sd-bus holds has the stand-in; the fd received is closed by the closer, and
         * only the sender's own stays. */
        assert_true(wait_open(&bad_st, 1));
        close(got[0]);
        close(got[1]);
        fd_screen_install(NULL);
        fd_screen_free(s);
        close(bad);
        close(good);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_closer),
                cmocka_unit_test(test_recvmsg),
                cmocka_unit_test(test_sd_bus),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
