/* SPDX-License-Identifier: MIT */
#include <stdlib.h>

#include "basic/strv.h"

char **strv_free(char **l)
{
        if (!l)
                return NULL;
        for (char **p = l; *p; p++)
                free(*p);
        free(l);
        return NULL;
}

size_t strv_length(char *const *l)
{
        size_t n = 0;

        while (l && l[n])
                n++;
        return n;
}
