/* SPDX-License-Identifier: MIT */
/* parcel.c: the fds of one call, kept by the gate that received them until the call's handler takes them */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/parcel.h"

int parcel_new(const char *sender, uint32_t serial, uid_t uid, size_t n, Parcel **ret)
{
        Parcel *p;

        p = calloc(1, sizeof(Parcel) + n * sizeof(ParcelEntry));
        if (!p)
                return -ENOMEM;
        if (sender) {
                p->sender = strdup(sender);
                if (!p->sender) {
                        free(p);
                        return -ENOMEM;
                }
        }
        p->serial = serial;
        p->uid = uid;
        p->transit = USER_CHARGE_INIT(USER_RESOURCE_TRANSIT);
        p->n = n;
        for (size_t i = 0; i < n; i++)
                p->entries[i] = (ParcelEntry){ .fd = -EBADF, .verdict = { .flags = -1 } };
        *ret = p;
        return 0;
}

Parcel *parcel_free(Parcel *p)
{
        if (!p)
                return NULL;
        for (size_t i = 0; i < p->n; i++)
                safe_close(p->entries[i].fd);
        user_charge_deinit(&p->transit);
        free(p->sender);
        return mfree(p);
}

int parcel_take_fd(Parcel *p, size_t i)
{
        int fd;

        if (i >= p->n || p->entries[i].fd < 0)
                return -EBADF;
        fd = TAKE_FD(p->entries[i].fd);
        user_charge_release(&p->transit, 1);
        return fd;
}
