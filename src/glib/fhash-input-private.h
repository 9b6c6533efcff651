/* SPDX-License-Identifier: MIT */
/* fhash-input-private.h: an FhashInput as libfhash's source gives it, for the layer's own files */
#pragma once

#include "fhash/fhash.h"
#include "glib/fhash-input.h"

/* Fills ret (zeroed by libfhash) from input: its strings and fd are input's, so input must live until
 * its result comes back, which carries it as userdata. */
void input_to_core(FhashInput *input, fhash_input *ret);
