/* SPDX-License-Identifier: MIT */
/* time-util.h: the one clock fhash measures with */
#pragma once

#include <stdint.h>

#define USEC_PER_SEC UINT64_C(1000000)
#define USEC_PER_MSEC UINT64_C(1000)

/* CLOCK_MONOTONIC in microseconds: durations, deadlines, rates. Never goes back, never jumps with
 * the wall clock. */
uint64_t now_usec(void);
