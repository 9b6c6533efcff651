/* SPDX-License-Identifier: MIT */
/* strv.h: NULL-terminated string arrays */
#pragma once

#include <stddef.h>

#include "basic/macro.h"

/* Frees every string and the array; takes NULL, returns NULL. */
char **strv_free(char **l);
DEFINE_TRIVIAL_CLEANUP_FUNC(char **, strv_free);
#define _cleanup_strv_free_ _cleanup_(strv_freep)
/* Entries before the terminating NULL; 0 for NULL. */
size_t strv_length(char *const *l);
