/* SPDX-License-Identifier: MIT */
/* fhash-dbus.h: names shared by fhashd, fhashctl and other clients: bus names, paths, interfaces, errors */
#pragma once

#define FHASH_BUS_NAME "org.fhash.Hasher1"
#define FHASH_MANAGER_PATH "/org/fhash/Hasher1"
#define FHASH_JOB_PATH_PREFIX "/org/fhash/Hasher1/job"
#define FHASH_MANAGER_INTERFACE "org.fhash.Hasher1.Manager"
#define FHASH_JOB_INTERFACE "org.fhash.Hasher1.Job"

/* Per-file errors carried in FilesHashed results, and method errors. */
#define FHASH_ERROR_PREFIX "org.fhash.Hasher1.Error."
#define FHASH_ERROR_NOT_FOUND FHASH_ERROR_PREFIX "NotFound"
#define FHASH_ERROR_ACCESS_DENIED FHASH_ERROR_PREFIX "AccessDenied"
#define FHASH_ERROR_IO FHASH_ERROR_PREFIX "IO"
#define FHASH_ERROR_CHANGED FHASH_ERROR_PREFIX "Changed"
#define FHASH_ERROR_NOT_REGULAR FHASH_ERROR_PREFIX "NotRegular"
#define FHASH_ERROR_MISMATCH FHASH_ERROR_PREFIX "Mismatch"
#define FHASH_ERROR_CANCELLED FHASH_ERROR_PREFIX "Cancelled"
#define FHASH_ERROR_BUSY FHASH_ERROR_PREFIX "Busy"
#define FHASH_ERROR_TOO_LARGE FHASH_ERROR_PREFIX "TooLarge"
#define FHASH_ERROR_TIMED_OUT FHASH_ERROR_PREFIX "TimedOut"
/* AddFds() on a job that takes no more inputs: closed, finished or cancelled. */
#define FHASH_ERROR_JOB_CLOSED FHASH_ERROR_PREFIX "JobClosed"
/* GetResults/GetResultsFrom of a job whose owner released it (Release()) or disconnected: only its
 * state and counts are left. */
#define FHASH_ERROR_RELEASED FHASH_ERROR_PREFIX "Released"
/* Never sent by fhashd: libfhash's name for a run that lost fhashd (it exited, crashed or restarted
 * while the run had files in it) and did not, or could not, go on with another (fhash.h). */
#define FHASH_ERROR_GONE FHASH_ERROR_PREFIX "Gone"
/* Never sent by fhashd: libfhash's name for no fhashd to reach where no bus answered (fhash.h). */
#define FHASH_ERROR_NOT_REACHABLE FHASH_ERROR_PREFIX "NotReachable"

/* The values of a job's option "priority" and of its Priority property, those of fhash_priority
 * (fhash.h) in its order: FHASH_PRIORITY_NORMAL is "normal", and so on. */
#define FHASH_PRIORITY_NAME_NORMAL "normal"
#define FHASH_PRIORITY_NAME_INTERACTIVE "interactive"
#define FHASH_PRIORITY_NAME_BACKGROUND "background"

/* The system bus lets a message carry at most 16 fds. */
#define FHASH_MAX_FDS_PER_CALL 16
/* HashNames and AddNames: names in one call (beneath at most FHASH_MAX_FDS_PER_CALL directories). */
#define FHASH_MAX_NAMES_PER_CALL 4096
/* The longest name (option "names") a caller may give an input, in bytes: a path's length. */
#define FHASH_NAME_MAX 4095
/* The most bytes of results one GetResults/GetResultsFrom reply carries: well under the 32 MiB a
 * bus message may have (dbus-daemon disconnects a sender of a bigger one, fhashd included). */
#define FHASH_REPLY_BYTES_MAX (8u << 20)
