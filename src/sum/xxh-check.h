/* SPDX-License-Identifier: MIT */
/* xxh-check.h: xxhsum -c */
#pragma once

#include "sum/xxh-hash.h"

/* One checksum file, as XSUM_checkFile(): true if all is well. */
bool xxh_check_file(Xxh *x, const char *path);
