/* SPDX-License-Identifier: MIT */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "ctl/macro.h"
#include "ctl/progress.h"

/* The fd a progress line is on the screen of, for progress_erase_from_signal(); -1: none. */
static volatile sig_atomic_t screen_fd = -1;

void progress_init(Progress *p, ProgressMode mode, int fd)
{
        *p = (Progress){
                .enabled = mode != PROGRESS_OFF && isatty(fd),
                .fd = fd,
                .delay_usec = mode == PROGRESS_ON ? 0 : 1000000,
                .start_usec = ctl_now_usec(),
        };
}

void progress_format_bytes(char *buf, size_t size, double v)
{
        static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
        size_t u = 0;

        while (v >= 1024 && u + 1 < ELEMENTSOF(units)) {
                v /= 1024;
                u++;
        }
        if (u == 0)
                snprintf(buf, size, "%.0f %s", v, units[u]);
        else
                snprintf(buf, size, "%.1f %s", v, units[u]);
}

/* progress_format(), the percentage never below *floor (when given), which it raises to what it shows. */
static void format_line(char *buf, size_t size, const ProgressState *s, uint64_t elapsed_usec, unsigned *floor)
{
        char done[32], total[32], rate[32], eta[32] = "";
        double r = s->rate;
        unsigned pct;

        if (r <= 0 && elapsed_usec > 0)
                r = (double)s->bytes_done * 1e6 / (double)elapsed_usec;
        if (s->open_ended || s->bytes_done > s->bytes_total) {
                progress_format_bytes(done, sizeof(done), (double)s->bytes_done);
                progress_format_bytes(rate, sizeof(rate), r);
                snprintf(buf, size, "%s  %zu files  %s/s", done, s->files_done, rate);
                return;
        }
        pct = s->bytes_total > 0 ? (unsigned)(MIN(s->bytes_done, s->bytes_total) * 100 / s->bytes_total) : 0;
        /* The total grows as files are opened (check knows its files long before their sizes):
         * what was shown stays until the work passes it, rather than going 94% -> 90%. */
        if (floor) {
                pct = MAX(pct, *floor);
                *floor = pct;
        }
        progress_format_bytes(done, sizeof(done), (double)s->bytes_done);
        progress_format_bytes(total, sizeof(total), (double)s->bytes_total);
        progress_format_bytes(rate, sizeof(rate), r);
        if (r > 0 && s->bytes_total > s->bytes_done) {
                uint64_t left = (uint64_t)((double)(s->bytes_total - s->bytes_done) / r);
                if (left >= 3600)
                        snprintf(eta, sizeof(eta), "  ETA %" PRIu64 ":%02" PRIu64 ":%02" PRIu64, left / 3600,
                                 left / 60 % 60, left % 60);
                else
                        snprintf(eta, sizeof(eta), "  ETA %" PRIu64 ":%02" PRIu64, left / 60, left % 60);
        }
        snprintf(buf, size, "[%3u%%] %s / %s  %zu/%zu files  %s/s%s", pct, done, total, s->files_done,
                 s->files_total, rate, eta);
}

void progress_format(char *buf, size_t size, const ProgressState *s, uint64_t elapsed_usec)
{
        format_line(buf, size, s, elapsed_usec, NULL);
}

void progress_fit(char *line, unsigned columns)
{
        size_t len = strlen(line), keep;
        char *cut;

        /* One column short of the width: a line that fills the last column leaves the cursor
         * waiting to wrap, and some terminals wrap on the erase that follows. */
        if (columns == 0 || len < columns)
                return;
        keep = columns - 1;
        /* Whole fields only (two spaces separate them), unless the first alone is too wide. */
        bool whole = line[keep] == ' ' && (line[keep + 1] == ' ' || (keep > 0 && line[keep - 1] == ' '));
        line[keep] = '\0';
        cut = whole ? NULL : strstr(line, "  ");
        for (char *next = cut; next; next = strstr(next + 2, "  "))
                cut = next;
        if (cut)
                *cut = '\0';
        for (len = strlen(line); len > 0 && line[len - 1] == ' ';)
                line[--len] = '\0';
}

void progress_update(Progress *p, const ProgressState *s)
{
        char line[160], out[192];
        struct winsize ws = {};
        uint64_t now;
        int n;

        if (!p->enabled)
                return;
        now = ctl_now_usec();
        if (now - p->start_usec < p->delay_usec || (p->shown && now - p->last_usec < 250000))
                return;
        format_line(line, sizeof(line), s, now - p->start_usec, &p->pct);
        /* Asked each time: the window may have been resized. A line wider than the terminal
         * wraps, and \r then goes back to the start of the last row only, leaving the others. */
        if (ioctl(p->fd, TIOCGWINSZ, &ws) >= 0)
                progress_fit(line, ws.ws_col);
        /* \r and erase-to-end-of-line: one line that overwrites itself, never scrolls. */
        n = snprintf(out, sizeof(out), "\r%s\033[K", line);
        if (n > 0)
                (void)!write(p->fd, out, MIN((size_t)n, sizeof(out) - 1));
        p->shown = true;
        p->last_usec = now;
        screen_fd = p->fd;
}

void progress_clear(Progress *p)
{
        if (!p || !p->shown)
                return;
        (void)!write(p->fd, "\r\033[K", 4);
        p->shown = false;
        screen_fd = -1;
}

void progress_erase_from_signal(void)
{
        int fd = screen_fd;

        if (fd >= 0)
                (void)!write(fd, "\r\033[K", 4);
}
