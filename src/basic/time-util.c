/* SPDX-License-Identifier: MIT */
#include <time.h>

#include "basic/time-util.h"

uint64_t now_usec(void)
{
        struct timespec ts;

        (void)clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * USEC_PER_SEC + (uint64_t)ts.tv_nsec / 1000u;
}
