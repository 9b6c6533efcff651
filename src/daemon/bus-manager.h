/* SPDX-License-Identifier: MIT */
/* bus-manager.h: the org.fhash.Hasher1.Manager interface on /org/fhash/Hasher1 */
#pragma once

typedef struct Manager Manager;

/* Adds the Manager vtable on FHASH_MANAGER_PATH. */
int bus_manager_register(Manager *m);
