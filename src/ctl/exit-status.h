/* SPDX-License-Identifier: MIT */
/* exit-status.h: fhashctl's exit codes, as coreutils' */
#pragma once

/* 0 all good, 1 a file failed or did not match, 2 usage errors. */
#define CTL_EXIT_OK 0
#define CTL_EXIT_FAILED 1
#define CTL_EXIT_USAGE 2
