/* SPDX-License-Identifier: MIT */
/* fhash-internal.h: what fhash.c (the client, the blocking calls) and fhash-run.c (a run) share;
 * nothing here is exported from libfhash.so */
#pragma once

#include <systemd/sd-bus.h>

#include "basic/macro.h"
#include "fhash/fhash.h"

struct fhash_client {
        sd_bus *bus;  /* NULL: in-process */
        unsigned flags;
        char *fallback_reason;  /* why fhashd could not be reached, when hashing in-process instead */
        void (*busy_notice)(const char *reason, int gives_up, void *userdata);
        void *notice_userdata;
};

/* Fills e (when not NULL) with r (-EIO when r >= 0), the D-Bus error name (or "") and the message;
 * returns the negative errno. */
_printf_(4, 5) int fhash_set_error(fhash_error *e, int r, const char *name, const char *fmt, ...);
/* r with e taken from what sd-bus said (be), else strerror(); what is the message's start. */
int fhash_set_bus_error(fhash_error *e, int r, const sd_bus_error *be, const char *what);

/* Checks the inputs (paths[i] or fds[i]) and starts a run over them without waiting. */
int fhash_run_start(fhash_client *c, const char *const *paths, const int *fds, const char *const *names, size_t n,
                    const fhash_hash_options *options, fhash_result_fn fn, void *userdata, fhash_run **ret,
                    fhash_error *error);
/* One step, waiting up to timeout_usec: 1 while the run goes on, 0 when it is over, -errno. */
int fhash_run_step(fhash_run *r, uint64_t timeout_usec, fhash_error *error);
