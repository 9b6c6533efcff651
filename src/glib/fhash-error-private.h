/* SPDX-License-Identifier: MIT */
/* fhash-error-private.h: libfhash's errors as FHASH_CLIENT_ERROR codes, for the layer's own files */
#pragma once

#include "fhash/fhash.h"
#include "glib/fhash-error.h"

/* The code of a D-Bus error name (fhashd's own, the bus's); FAILED for a name that says nothing. */
FhashClientError error_code_from_name(const char *name);
/* The code of an errno (either sign), as libfhash and fhashd class them; FAILED for another. */
FhashClientError error_code_from_errno(int error);
/* A run's error (libfhash's fhash_error) as a GError of FHASH_CLIENT_ERROR: its name decides, else its
 * errno; its message is kept. */
GError *error_from_core(const fhash_error *e);
