/* SPDX-License-Identifier: MIT */
/* exit-status.h: fhashctl's exit codes, as coreutils' */
#pragma once

/* 0 all good, 1 a file failed or did not match, 2 usage errors; fhashctl's verbs (not the tools it
 * can be) add 3: the run stopped before every file had its result (fhashd went away and none could
 * be reached again with --daemon, it stayed busy past FHASHCTL_BUSY_TIMEOUT): what was printed is
 * a part. */
#define CTL_EXIT_OK 0
#define CTL_EXIT_FAILED 1
#define CTL_EXIT_USAGE 2
#define CTL_EXIT_ABORTED 3
