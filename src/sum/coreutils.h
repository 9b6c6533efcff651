/* SPDX-License-Identifier: MIT */
/* coreutils.h: fhashctl as coreutils' md5sum, sha*sum, b2sum, cksum and sum */
#pragma once

#include "sum/common.h"

typedef enum CuTool {
        CU_MD5SUM,
        CU_SHA1SUM,
        CU_SHA224SUM,
        CU_SHA256SUM,
        CU_SHA384SUM,
        CU_SHA512SUM,
        CU_B2SUM,
        CU_CKSUM,
        CU_SUM,
        _CU_TOOL_MAX,
} CuTool;

/* The tool p->tool names, as coreutils 9.11 (FHASH_COMPAT=debian12: 9.1) behaves. */
int cu_main(const Persona *p, int argc, char *argv[]);
