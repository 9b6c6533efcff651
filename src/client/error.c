/* SPDX-License-Identifier: MIT */
/* error.c: filling in an fhash_error */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "client/error.h"

int fhash_set_error(fhash_error *e, int r, const char *name, const char *fmt, ...)
{
        va_list ap;

        if (r >= 0)
                r = -EIO;
        if (e) {
                *e = (fhash_error){ .error = r };
                (void)snprintf(e->name, sizeof(e->name), "%s", name ? name : "");
                va_start(ap, fmt);
                (void)vsnprintf(e->message, sizeof(e->message), fmt, ap);
                va_end(ap);
        }
        return r;
}

int fhash_set_bus_error(fhash_error *e, int r, const sd_bus_error *be, const char *what)
{
        if (sd_bus_error_is_set(be))
                return fhash_set_error(e, r, be->name, "%s: %s", what, be->message ? be->message : be->name);
        return fhash_set_error(e, r, NULL, "%s: %s", what, strerror(r < 0 ? -r : EIO));
}
