/* SPDX-License-Identifier: MIT */
/* error.h: filling in an fhash_error, the one way libfhash says why a call failed */
#pragma once

#include <systemd/sd-bus.h>

#include "basic/macro.h"
#include "fhash/fhash.h"

/* Fills e (when not NULL) with r (-EIO when r >= 0), the D-Bus error name (or "") and the message;
 * returns the negative errno. */
_printf_(4, 5) int fhash_set_error(fhash_error *e, int r, const char *name, const char *fmt, ...);
/* r with e taken from what sd-bus said (be), else strerror(); what is the message's start. */
int fhash_set_bus_error(fhash_error *e, int r, const sd_bus_error *be, const char *what);
