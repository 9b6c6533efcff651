/* SPDX-License-Identifier: MIT */
/* coreutils-check.h: the coreutils tools' -c */
#pragma once

#include "sum/coreutils-tool.h"

/* Checks every line of one checksum file: true if all is well (coreutils' digest_check()). */
bool cu_digest_check(Cu *cu, const char *checkfile);
