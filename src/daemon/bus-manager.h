/* SPDX-License-Identifier: MIT */
/* bus-manager.h: the org.fhash.Hasher1.Manager interface on /org/fhash/Hasher1 */
#pragma once

#include <systemd/sd-bus.h>

#include "daemon/context.h"

/* Adds the Manager vtable on FHASH_MANAGER_PATH of bus: fhashd's bus, or a direct connection. */
int bus_manager_register(Context *c, sd_bus *bus);
