/* SPDX-License-Identifier: MIT */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "basic/macro.h"
#include "basic/time-util.h"
#include "ctl/progress.h"

void progress_init(Progress *p, ProgressMode mode, int fd)
{
        *p = (Progress){
                .enabled = mode != PROGRESS_OFF && isatty(fd),
                .fd = fd,
                .delay_usec = mode == PROGRESS_ON ? 0 : 1000000,
                .start_usec = now_usec(),
        };
}

static void format_bytes(char *buf, size_t size, double v)
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

void progress_format(char *buf, size_t size, const ProgressState *s, uint64_t elapsed_usec)
{
        char done[32], total[32], rate[32], eta[32] = "";
        double r = s->rate;
        unsigned pct;

        if (r <= 0 && elapsed_usec > 0)
                r = (double)s->bytes_done * 1e6 / (double)elapsed_usec;
        if (s->open_ended || s->bytes_done > s->bytes_total) {
                format_bytes(done, sizeof(done), (double)s->bytes_done);
                format_bytes(rate, sizeof(rate), r);
                snprintf(buf, size, "%s  %zu files  %s/s", done, s->files_done, rate);
                return;
        }
        pct = s->bytes_total > 0 ? (unsigned)(MIN(s->bytes_done, s->bytes_total) * 100 / s->bytes_total) : 0;
        format_bytes(done, sizeof(done), (double)s->bytes_done);
        format_bytes(total, sizeof(total), (double)s->bytes_total);
        format_bytes(rate, sizeof(rate), r);
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

void progress_update(Progress *p, const ProgressState *s)
{
        char line[160], out[192];
        uint64_t now;
        int n;

        if (!p->enabled)
                return;
        now = now_usec();
        if (now - p->start_usec < p->delay_usec || (p->shown && now - p->last_usec < 250000))
                return;
        progress_format(line, sizeof(line), s, now - p->start_usec);
        /* \r and erase-to-end-of-line: one line that overwrites itself, never scrolls. */
        n = snprintf(out, sizeof(out), "\r%s\033[K", line);
        if (n > 0)
                (void)!write(p->fd, out, MIN((size_t)n, sizeof(out) - 1));
        p->shown = true;
        p->last_usec = now;
}

void progress_clear(Progress *p)
{
        if (!p || !p->shown)
                return;
        (void)!write(p->fd, "\r\033[K", 4);
        p->shown = false;
}
