/* SPDX-License-Identifier: MIT */
/* bus.h: which bus fhashd and its clients meet on, and opening a connection to it */
#pragma once

#include <getopt.h>
#include <stdbool.h>
#include <systemd/sd-bus.h>

typedef enum BusKind {
        BUS_KIND_SYSTEM,
        BUS_KIND_USER,
        BUS_KIND_ADDRESS,  /* --address, or DBUS_STARTER_ADDRESS when bus-activated on any bus */
} BusKind;

/* Opens a client connection to the bus of kind (address for BUS_KIND_ADDRESS), with fd passing
 * negotiated and description set (may be NULL), and started. -errno as sd-bus gives it. */
int bus_open(BusKind kind, const char *address, const char *description, sd_bus **ret);

/* Connects and pings fhashd (which D-Bus-activates it where it is activatable). -errno with error set
 * to the bus's reason when there is no bus or nobody owns org.fhash.Hasher1. */
int bus_open_fhashd(BusKind kind, const char *address, sd_bus **ret, sd_bus_error *error);

/* fhashd's and fhashctl's --system, --user and --address, for a struct option table. */
#define BUS_KIND_OPTIONS(system_val, user_val, address_val)                                                \
        { "system", no_argument, NULL, (system_val) }, { "user", no_argument, NULL, (user_val) },          \
                { "address", required_argument, NULL, (address_val) }

/* "system", "user" or "given": for messages. */
const char *bus_kind_to_string(BusKind kind);

/* Whether address is a D-Bus address sd-bus can connect to: one or more TRANSPORT:KEY=VALUE,...
 * separated by ';', each a transport sd-bus knows (unix, tcp, unixexec, x-machine-unix) with the key
 * it needs; values not empty, with '%' only as the specification's %XX escape. */
bool bus_address_is_valid(const char *address);

/* A connection to fhashd on kind failed with r (and error, when the bus answered): why, in words
 * for a person, naming the bus and its address ("no system bus at unix:path=/run/dbus/...: No such
 * file or directory", "fhashd is not on the session bus (unix:path=/run/user/1000/bus): ..."; never
 * a bare "No medium found"). Returns a malloc'd string, or NULL without memory. */
char *bus_explain_open_error(BusKind kind, const char *address, int r, const sd_bus_error *error);

/* The bus answered, but nobody owns fhashd's name and nothing activates it. */
bool bus_error_is_no_fhashd(const char *error_name);

/* Whether error is set and more than an errno in a name (sd-bus's System.Error.ENOTCONN and the
 * like, which say nothing the errno does not): a name worth handing on. */
bool bus_error_has_name(const sd_bus_error *error);
