/* SPDX-License-Identifier: MIT */
/* personality.h: which tool fhashctl is: sha256sum, md5sum, b2sum, cksum, sum, b3sum, xxhsum, ... */
#pragma once

#include "sum/common.h"

/* See common.h for what being a tool means. */

/* The tool called name (a basename), or NULL. */
const Persona *persona_find(const char *name);
/* fhashctl's first step: runs the tool that argv[0]'s basename names, or that `--as NAME` (or
 * --as=NAME) as the first argument names, and returns its exit status; -ENOENT when fhashctl is
 * to go on as itself. A --as that names no tool is a usage error, said, and exit status 2. */
int persona_dispatch(int argc, char *argv[]);
