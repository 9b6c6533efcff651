/* SPDX-License-Identifier: MIT */
/* xxh.h: fhashctl as xxHash's xxhsum, xxh32sum, xxh64sum, xxh128sum and xxh3sum */
#pragma once

#include "sum/common.h"

typedef enum XxhTool {
        XXH_SUM,     /* xxhsum: XXH64 unless -H says otherwise */
        XXH_32SUM,   /* xxh32sum: xxhsum -H0, and -c takes XXH32 lines only */
        XXH_64SUM,
        XXH_128SUM,
        XXH_3SUM,
} XxhTool;

/* The tool p->tool names, as xxhsum 0.8.3 (FHASH_COMPAT=debian12: 0.8.1) behaves. */
int xxh_main(const Persona *p, int argc, char *argv[]);
