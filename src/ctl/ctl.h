/* SPDX-License-Identifier: MIT */
/* ctl.h: fhashctl: every verb, from the command line to the exit code */
#pragma once

#include "ctl/exit-status.h"

/* The whole program but main(), so that tests link the code that ships. Returns the exit code
 * (exit-status.h). */
int ctl_main(int argc, char *argv[]);
