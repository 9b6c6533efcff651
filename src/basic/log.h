/* SPDX-License-Identifier: MIT */
/* log.h: a tiny stderr logger with "<N>" priority prefixes, so journald keeps the levels */
#pragma once

#include <syslog.h>

#include "basic/macro.h"

/* Messages above this priority (numerically greater, i.e. less important) are dropped. */
void log_set_max_level(int level);
int log_get_max_level(void);
/* Parses "debug", "info", ... or a number 0..7; -EINVAL otherwise. */
int log_level_from_string(const char *s);

/* Writes "<level>message\n" to stderr. error is a positive or negative errno for %m, or 0.
 * Returns -abs(error), so that callers can write `return log_error_errno(r, "...: %m");`. */
int log_internal(int level, int error, const char *fmt, ...) _printf_(3, 4);

#define log_full_errno(level, error, ...) log_internal((level), (error), __VA_ARGS__)
#define log_debug(...) log_internal(LOG_DEBUG, 0, __VA_ARGS__)
#define log_info(...) log_internal(LOG_INFO, 0, __VA_ARGS__)
#define log_notice(...) log_internal(LOG_NOTICE, 0, __VA_ARGS__)
#define log_warning(...) log_internal(LOG_WARNING, 0, __VA_ARGS__)
#define log_error(...) log_internal(LOG_ERR, 0, __VA_ARGS__)
#define log_debug_errno(error, ...) log_internal(LOG_DEBUG, (error), __VA_ARGS__)
#define log_warning_errno(error, ...) log_internal(LOG_WARNING, (error), __VA_ARGS__)
#define log_error_errno(error, ...) log_internal(LOG_ERR, (error), __VA_ARGS__)

/* Logs "Out of memory." at LOG_ERR and returns -ENOMEM. */
int log_oom(void);
