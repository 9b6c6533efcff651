/* SPDX-License-Identifier: MIT */
/* test-dbus-builder.h: D-Bus messages built byte by byte, for the tests of dbus-message */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/dbus-message.h"

/*
 * A message is built as the specification lays it out, with every knob a test needs to break one
 * rule alone: the byte order, the padding bytes, the lengths in the fixed header, the fds that go
 * with it. Alignment counts from the message's start. Allocation failures fail the test (cmocka).
 */

typedef struct Buf {
        uint8_t *b;
        size_t n, cap;
        bool be;
        uint8_t fill; /* the bytes of the next padding only; then 0 again */
} Buf;

void buf_pad(Buf *b, size_t align);
void buf_raw(Buf *b, const void *p, size_t n);
void buf_u8(Buf *b, uint8_t v);
void buf_uint(Buf *b, uint64_t v, size_t size);
void buf_u32(Buf *b, uint32_t v);
/* Writes v over the UINT32 at offset at, written before its value was known. */
void patch_u32(Buf *b, size_t at, uint32_t v);
/* A STRING or OBJECT_PATH of n bytes (which may hold a NUL, for the tests that need one). */
void buf_str_n(Buf *b, const char *s, size_t n);
void buf_str(Buf *b, const char *s);
void buf_sig(Buf *b, const char *s);

typedef struct Msg {
        Buf h; /* fixed header (written last) and fields */
        Buf body;
        uint8_t type, flags, version;
        uint32_t serial;
        uint8_t byte_order;   /* 0: 'l' or 'B' as h.be says */
        uint8_t header_fill;  /* the bytes of the padding after the fields */
        bool trailing_pad;    /* count the padding after the last field in the fields' length */
        int64_t body_delta;   /* the fixed header's body length minus the real one */
        uint32_t fields_size; /* if not 0: the fixed header's fields length */
        size_t n_fds;         /* how many fds go with it */
        size_t cut;           /* if not 0: only the first cut bytes are the message handed over */
} Msg;

/* Starts a message of this type anew, in m->h.be's byte order. */
void msg_start(Msg *m, uint8_t type);
/* A header field's code and signature; its value follows in m->h. */
void field(Msg *m, uint8_t code, const char *sig);
void field_str(Msg *m, uint8_t code, char type, const char *s);
void field_u32(Msg *m, uint8_t code, uint32_t v);
void field_sig(Msg *m, uint8_t code, const char *s);
/* The whole message, in a buffer with 8 spare zero bytes; the caller frees it. */
uint8_t *msg_finish(Msg *m, size_t *ret_len);
void msg_free(Msg *m);

/* ---- the four messages every case starts from, with fields left out on request ---- */

#define NO(f) (1u << (f))
enum {
        PATH = DBUS_FIELD_PATH,
        INTERFACE = DBUS_FIELD_INTERFACE,
        MEMBER = DBUS_FIELD_MEMBER,
        ERROR_NAME = DBUS_FIELD_ERROR_NAME,
        REPLY_SERIAL = DBUS_FIELD_REPLY_SERIAL,
        DESTINATION = DBUS_FIELD_DESTINATION,
        SENDER = DBUS_FIELD_SENDER,
        SIGNATURE = DBUS_FIELD_SIGNATURE,
        UNIX_FDS = DBUS_FIELD_UNIX_FDS,
};

/* HashFds(ah fds, s algorithm) with two fds, as fhashctl sends it. */
void base_call(Msg *m, unsigned omit);
/* The job's path in return for a call with serial 7. */
void base_return(Msg *m, unsigned omit);
/* org.fhash.Error.Busy in return for a call with serial 7. */
void base_error(Msg *m, unsigned omit);
/* A job's FilesHashed. */
void base_signal(Msg *m, unsigned omit);
