/* SPDX-License-Identifier: MIT */
/* fhash-result-private.h: FhashResult from libfhash's fhash_result, for the layer's own files */
#pragma once

#include "fhash/fhash.h"
#include "glib/fhash-result.h"

/* A copy of r (whose strings last only during libfhash's callback), with its error as a GError. */
FhashResult *result_new_from_core(const fhash_result *r);
