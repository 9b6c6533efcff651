/* SPDX-License-Identifier: MIT */
/* priority.c: a job's priority as the option "priority" names it on the wire */
#include "protocol/priority.h"

static const char *const job_priority_table[_JOB_PRIORITY_MAX] = {
        [JOB_PRIORITY_NORMAL] = "normal",
        [JOB_PRIORITY_INTERACTIVE] = "interactive",
        [JOB_PRIORITY_BACKGROUND] = "background",
};

DEFINE_STRING_TABLE_LOOKUP(job_priority, JobPriority, job_priority_table, _JOB_PRIORITY_MAX, _JOB_PRIORITY_INVALID)
