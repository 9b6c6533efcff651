/* SPDX-License-Identifier: MIT */
/* priority.h: a job's priority as the option "priority" names it on the wire */
#pragma once

#include <errno.h>

#include "basic/string-table.h"

/*
 * The values are those of fhash_priority (include/fhash/fhash.h), in the same order, so that
 * libfhash passes its caller's through unchanged. What each one does: README.md, "Priorities".
 */
typedef enum JobPriority {
        JOB_PRIORITY_NORMAL,       /* "normal", the default */
        JOB_PRIORITY_INTERACTIVE,  /* "interactive": someone waits; before the user's other jobs */
        JOB_PRIORITY_BACKGROUND,   /* "background": only what nobody else wants */
        _JOB_PRIORITY_MAX,
        _JOB_PRIORITY_INVALID = -EINVAL,
} JobPriority;

DECLARE_STRING_TABLE_LOOKUP(job_priority, JobPriority);
