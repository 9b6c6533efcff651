/* SPDX-License-Identifier: MIT */
/* log.c: stderr logger with "<N>" priority prefixes */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/log.h"

static int max_level = LOG_INFO;

void log_set_max_level(int level)
{
        max_level = level;
}

int log_get_max_level(void)
{
        return max_level;
}

int log_level_from_string(const char *s)
{
        static const char *const names[] = {
                "emerg", "alert", "crit", "err", "warning", "notice", "info", "debug",
        };

        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                if (streq(s, names[i]))
                        return (int)i;
        if (streq(s, "error"))
                return LOG_ERR;
        if (s[0] >= '0' && s[0] <= '7' && s[1] == '\0')
                return s[0] - '0';
        return -EINVAL;
}

int log_internal(int level, int error, const char *fmt, ...)
{
        int e = error < 0 ? -error : error;

        if (level <= max_level) {
                char buf[2048];
                va_list ap;

                /* %m must expand to the errno we were given, not whatever the last libc call left. */
                errno = e;
                va_start(ap, fmt);
                (void)vsnprintf(buf, sizeof(buf), fmt, ap);
                va_end(ap);
                /* One fprintf per line: stderr is unbuffered, and a single write keeps concurrent lines
                 * from interleaving in the journal. */
                (void)fprintf(stderr, "<%d>%s\n", level, buf);
        }
        return -e;
}

int log_oom(void)
{
        return log_error_errno(ENOMEM, "Out of memory.");
}
