/* SPDX-License-Identifier: MIT */
/* b3.h: fhashctl as BLAKE3's b3sum */
#pragma once

#include "sum/common.h"

/* b3sum, as b3sum 1.8.6 (FHASH_COMPAT=debian12: 1.2.0) behaves. */
int b3_main(const Persona *p, int argc, char *argv[]);
