/* SPDX-License-Identifier: MIT */
/* client.h: an fhash_client: a connection to fhashd, or none (the engine in this process) */
#pragma once

#include <systemd/sd-bus.h>

#include "client/bus-connect.h"
#include "fhash/fhash.h"

struct fhash_client {
        sd_bus *bus;            /* NULL: in-process */
        BusTarget target;       /* where fhashd was found: a run that loses it looks there again */
        unsigned flags;         /* FHASH_CLIENT_* */
        char *fallback_reason;  /* why fhashd could not be reached, when hashing in-process instead */
        void (*busy_notice)(const char *reason, int gives_up, void *userdata);
        void *notice_userdata;
};
