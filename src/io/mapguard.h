/* SPDX-License-Identifier: MIT */
/* mapguard.h: reading a file mapping without dying of SIGBUS when the file shrinks underneath */
#pragma once

#include <stddef.h>

/*
 * A mapped file that another process truncates raises SIGBUS on the next access past the new end.
 * The engine hashes mappings of files it does not own, so a guarded access turns that signal into
 * an error for the one file (reported CHANGED) instead of killing the process. The handler is
 * process-wide; faults outside a guarded range go to whatever handled SIGBUS
 * before (by default: the process dies, as it would have without us).
 */

/* Installs the handler unless it is the current one; thread-safe. engine_new() calls it. Returns 0
 * or -errno. */
int mapguard_install(void);

/* Calls fn(userdata) with [p, p + len) guarded on this thread. Returns 0, or -EFAULT if an access
 * to the range raised SIGBUS, in which case fn was interrupted and any state it was updating must be
 * thrown away. Not reentrant on one thread. */
int mapguard_run(const void *p, size_t len, void (*fn)(void *userdata), void *userdata);
