/* SPDX-License-Identifier: MIT */
/* ctl.h: fhashctl's command line: verbs, options, exit codes */
#pragma once

/* Exit codes as coreutils: 0 all good, 1 a file failed or did not match, 2 usage errors. */
#define CTL_EXIT_OK 0
#define CTL_EXIT_FAILED 1
#define CTL_EXIT_USAGE 2

/* The whole program but main(), so that tests link the code that ships. Returns the exit code. */
int ctl_main(int argc, char *argv[]);
