/* SPDX-License-Identifier: MIT */
/* b3-check.h: b3sum --check */
#pragma once

#include "sum/b3-hash.h"

/* Checks every line of the checkfile at path, adding those that fail to *failed: 0, or -errno when
 * it cannot be read (-EILSEQ: a line that is not UTF-8), which ends the run with "Error: ...". */
int b3_check_file(B3 *b, const char *path, uint64_t *failed);
