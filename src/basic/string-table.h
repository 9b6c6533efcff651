/* SPDX-License-Identifier: MIT */
/* string-table.h: enum <-> string tables, defined once per enum */
#pragma once

#include "basic/macro.h"

/* Declares what DEFINE_STRING_TABLE_LOOKUP() defines, for a header. */
#define DECLARE_STRING_TABLE_LOOKUP(name, type)                                                            \
        const char *name##_to_string(type v);                                                              \
        type name##_from_string(const char *s)

/* name##_to_string() and name##_from_string() over a table of max strings indexed by the enum
 * (NULL for an out-of-range value; invalid for an unknown or NULL string), as systemd's
 * DEFINE_STRING_TABLE_LOOKUP. */
#define DEFINE_STRING_TABLE_LOOKUP(name, type, table, max, invalid)                                        \
        const char *name##_to_string(type v)                                                               \
        {                                                                                                  \
                if ((int)v < 0 || (int)v >= (max))                                                         \
                        return NULL;                                                                       \
                return (table)[v];                                                                         \
        }                                                                                                  \
        type name##_from_string(const char *s)                                                             \
        {                                                                                                  \
                for (int i = 0; s && i < (max); i++)                                                       \
                        if ((table)[i] && streq((table)[i], s))                                            \
                                return (type)i;                                                            \
                return (invalid);                                                                          \
        }
