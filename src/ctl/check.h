/* SPDX-License-Identifier: MIT */
/* check.h: fhashctl check */
#pragma once

#include "ctl/args.h"

/* Verifies the manifests a->rest names (none: standard input) as md5sum -c and its kin do; returns
 * the exit code. */
int verb_check(Args *a);
