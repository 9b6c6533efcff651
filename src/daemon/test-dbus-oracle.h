/* SPDX-License-Identifier: MIT */
/* test-dbus-oracle.h: sd-bus's own verdict on raw D-Bus messages, read from a socket as fhashd reads */
#pragma once

/*
 * For the tests of daemon/dbus-message (test-dbus-message-*.c, tests/fuzz/fuzz-dbus-message.c): a
 * server sd-bus on one end of a socketpair, past the handshake with fds negotiated, as fhashd's
 * direct connections run it; the test writes raw messages to the other end. A filter sees every
 * message sd-bus takes; one it drops is not seen (and sd-bus 252 keeps its fds open: the oracle
 * counts and closes them). Library code only: no cmocka, errors are returned.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <systemd/sd-bus.h>

typedef struct Oracle Oracle;

int oracle_new(Oracle **ret);
Oracle *oracle_free(Oracle *o);

/* Writes the message m (len bytes) with n_fds (at most ORACLE_FDS_MAX) copies of the oracle's
 * marker fd, then a call of its own, and runs sd-bus until that call is in. Returns 1 and the
 * message sd-bus took in *ret (the caller unrefs it), or 0 if sd-bus dropped it; *ret_leaked (if
 * not NULL) is how many copies of the marker sd-bus left open in this process without a message
 * holding them: the oracle closes them. -ECONNRESET: sd-bus closed the connection (the oracle
 * opens a new one for the next message, and counts it as dropped). */
int oracle_verdict(Oracle *o, const uint8_t *m, size_t len, size_t n_fds, sd_bus_message **ret,
                   unsigned *ret_leaked);
#define ORACLE_FDS_MAX 16

/* Copies of the marker open in this process now (the oracle's own not counted). */
unsigned oracle_marker_copies(Oracle *o);

/* The server bus, to make and send messages with sd-bus itself ... */
sd_bus *oracle_bus(Oracle *o);
/* ... and the next whole message it wrote, as bytes (into buf) with the fds that came with it (the
 * caller closes them). -EMSGSIZE if it does not fit in size or fds. */
int oracle_read(Oracle *o, uint8_t *buf, size_t size, size_t *ret_len, int *fds, size_t max_fds,
                size_t *ret_n_fds);
