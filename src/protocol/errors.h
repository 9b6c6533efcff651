/* SPDX-License-Identifier: MIT */
/* errors.h: org.fhash.Hasher1.Error.* names <-> errno, both directions, from one table */
#pragma once

#include <stddef.h>
#include <systemd/sd-bus.h>

#include "fhash/fhash-dbus.h"

/* The project's error names with their errno, for sd_bus_error_add_map() (the daemon, so that
 * sd_bus_error_set_errno() of one of ours says the name; clients, so that sd_bus_error_get_errno()
 * knows them). Lives as long as the process. */
const sd_bus_error_map *fhash_error_map(void);

/* The name a per-file errno (positive or negative) is reported with in a result: NotFound for
 * ENOENT/ENOTDIR/ENXIO/ENODEV, AccessDenied for EACCES/EPERM, NotRegular for EISDIR/ESPIPE, TooLarge,
 * Cancelled, TimedOut; IO for anything else (an EBADMSG checksum failure from the disk is an IO error,
 * never a Mismatch). */
const char *fhash_error_from_errno(int error);

/* The errno of an error name, given as its first n bytes (a result's error is "<name>: <text>"):
 * -errno, or -EIO for a name that is not ours. */
int fhash_error_to_errno(const char *name, size_t n);
