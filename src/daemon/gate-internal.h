/* SPDX-License-Identifier: MIT */
/* gate-internal.h: what gate.c and gate-read.c share */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "daemon/config.h"
#include "daemon/gate.h"

#define GATE_READ_CHUNK ((size_t)64 << 10)
/* A buffer grown past this for one message shrinks back once it went on. */
#define GATE_KEEP_MAX ((size_t)1 << 20)
/* Reads with fds whose message has not been framed yet. */
#define GATE_BATCHES_MAX 4
#define GATE_FDS_MAX FDS_PER_MESSAGE_MAX
/* Whose fds these are when the bus does not say (a message we drop, a gate going away). */
#define UID_UNKNOWN ((uid_t)-1)

/* The fds of one read, and the stream offsets it covered: they belong to the last message that
 * starts within it (they come with the bytes of the sendmsg() that carried them, and a read that
 * delivers them ends with that sendmsg's last byte). */
typedef struct FdBatch {
        uint64_t from, to;
        size_t n;
        bool lost;   /* MSG_CTRUNC: the kernel had more than it could give us */
        bool left;   /* read without room for them on purpose: their uid had none (gate_read()) */
        int fds[GATE_FDS_MAX];
} FdBatch;

struct Gate {
        Context *context;
        GateSide side;
        uid_t uid;                    /* GATE_SERVER: the client's */
        GateOps ops;
        void *userdata;
        int outer_fd;                 /* our dup of the socket we read; sd-bus writes to it */
        int inner_fd;                 /* our end of the pair sd-bus reads */
        int sdbus_fd;                 /* a dup of sd-bus's end: what it has not read (SIOCINQ) */
        sd_event_source *in_source, *out_source, *post_source;
        bool authenticated;           /* the handshake went through */
        bool closed;                  /* nothing more is read: end of input, or a violation */
        bool waiting;                 /* not reading for now: sd-bus is behind, or no room for fds */
        bool uid_pending;             /* GATE_CLIENT: waiting for sender_uid() to find a uid out */
        bool seen_ok;                 /* GATE_CLIENT: the bus said OK */

        uint8_t *buf;                 /* read, not passed on yet */
        size_t len, cap;
        uint64_t base;                /* the stream offset of buf[0] */
        size_t auth_scan;             /* handshake: where the next line starts */
        FdBatch *batches[GATE_BATCHES_MAX];
        size_t n_batches;
        FdBatch *spare[GATE_BATCHES_MAX + 1]; /* batches to use again: one per read with fds */
        size_t n_spare;

        /* The message at buf[0]: */
        size_t msg_total;             /* 0: not framed yet */
        FdBatch *msg_batch;           /* its fds, if any came */
        bool msg_ready;               /* judged and rewritten: on its way */
        size_t msg_head;              /* the length of its header as it came */
        uint8_t *hdr;                 /* its header as rewritten (hdr_len 0: it goes as it came) */
        size_t hdr_len, hdr_cap;
        size_t msg_sent;              /* of what goes, already passed on */

        uint64_t inner_sent;          /* bytes passed to sd-bus in all */
        Parcel *parcels, *parcels_tail;
        size_t n_parcels;
};

/* Closes fds that came with nothing we keep: each judged, the ones whose close could wait through
 * the closer, for uid. Returns what closing_take() last said (0 if nothing went there). */
int gate_dispose(Gate *g, uid_t uid, int *fds, size_t n);
/* An empty batch (one kept from before, or a new one). NULL without memory. */
FdBatch *batch_new(Gate *g);
/* Disposes of a batch's fds (for uid) and keeps it for batch_new(). Returns NULL. */
FdBatch *batch_free(Gate *g, FdBatch *b, uid_t uid);
/* A direct client's uid, or UID_UNKNOWN on the bus. */
uid_t gate_default_uid(const Gate *g);
/* The uid whose fds these are: a direct client's, or the bus sender's as the bus driver knows it
 * (UID_UNKNOWN if it cannot say), in *ret; -EAGAIN while that is found out: the gate waits for it. */
int gate_sender_uid(Gate *g, const char *sender, uid_t *ret);
/* Stops reading until gate_must_wait() says it may again (checked after each turn of the loop). */
void gate_wait(Gate *g);
/* What the client sent cannot be passed on: -EPROTO after the connection was closed for it; 0 on the
 * bus, where the message is dropped instead. */
int gate_violation(Gate *g, const char *what);
/* Readies the whole message at buf[0] to go on (gate-message.c): validated, its fds sorted, its
 * header rewritten. 1: it goes; 0: it was dropped (the bus); -EAGAIN: its sender's uid is being found
 * out (nothing done yet: it is readied again once known); < 0: the connection was closed for it. */
int gate_prepare(Gate *g);
/* How many fds one read of uid's may take (gate-read.c). */
size_t gate_room(Gate *g, uid_t uid);
/* Reads once (gate-read.c): the bytes read (their fds in a new batch), 0 at the end, -EAGAIN (also
 * while a sender's uid is found out), -EPROTO after a violation, -errno. */
ssize_t gate_read(Gate *g);
