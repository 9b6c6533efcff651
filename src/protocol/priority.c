/* SPDX-License-Identifier: MIT */
/* priority.c: a job's priority as the option "priority" names it on the wire */
#include "fhash/fhash-dbus.h"
#include "protocol/priority.h"

static const char *const job_priority_table[_JOB_PRIORITY_MAX] = {
        [JOB_PRIORITY_NORMAL] = FHASH_PRIORITY_NAME_NORMAL,
        [JOB_PRIORITY_INTERACTIVE] = FHASH_PRIORITY_NAME_INTERACTIVE,
        [JOB_PRIORITY_BACKGROUND] = FHASH_PRIORITY_NAME_BACKGROUND,
};

DEFINE_STRING_TABLE_LOOKUP(job_priority, JobPriority, job_priority_table, _JOB_PRIORITY_MAX, _JOB_PRIORITY_INVALID)
