/* SPDX-License-Identifier: MIT */
/* test-dbus-builder.c: D-Bus messages built byte by byte, for the tests of dbus-message */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "basic/macro.h"
#include "daemon/test-dbus-builder.h"

static void buf_grow(Buf *b, size_t more)
{
        if (b->n + more <= b->cap)
                return;
        b->cap = MAX(b->cap * 2, b->n + more + 256);
        b->b = realloc(b->b, b->cap);
        assert_non_null(b->b);
}

void buf_pad(Buf *b, size_t align)
{
        while (b->n % align) {
                buf_grow(b, 1);
                b->b[b->n++] = b->fill;
        }
        b->fill = 0;
}

void buf_raw(Buf *b, const void *p, size_t n)
{
        buf_grow(b, n);
        memcpy(b->b + b->n, p, n);
        b->n += n;
}

void buf_u8(Buf *b, uint8_t v)
{
        buf_raw(b, &v, 1);
}

void buf_uint(Buf *b, uint64_t v, size_t size)
{
        /* Zeroed: with size unknown here (2, 4 or 8 at the callers), cppcheck takes x as read
         * unset. */
        uint8_t x[8] = { 0 };

        buf_pad(b, size);
        for (size_t i = 0; i < size; i++)
                x[b->be ? size - 1 - i : i] = (uint8_t)(v >> (8 * i));
        buf_raw(b, x, size);
}

void buf_u32(Buf *b, uint32_t v)
{
        buf_uint(b, v, 4);
}

void patch_u32(Buf *b, size_t at, uint32_t v)
{
        for (size_t i = 0; i < 4; i++)
                b->b[at + (b->be ? 3 - i : i)] = (uint8_t)(v >> (8 * i));
}

void buf_str_n(Buf *b, const char *s, size_t n)
{
        buf_u32(b, (uint32_t)n);
        buf_raw(b, s, n);
        buf_u8(b, 0);
}

void buf_str(Buf *b, const char *s)
{
        buf_str_n(b, s, strlen(s));
}

void buf_sig(Buf *b, const char *s)
{
        buf_u8(b, (uint8_t)strlen(s));
        buf_raw(b, s, strlen(s) + 1);
}

void msg_start(Msg *m, uint8_t type)
{
        bool be = m->h.be;

        free(m->h.b);
        free(m->body.b);
        /* Not *m = (Msg){ ... }: clang-analyzer 14 reads the old buffers' pointers back through a
         * compound literal assigned to *m, and takes the next realloc() for a double free. */
        memset(m, 0, sizeof(*m));
        m->h.be = m->body.be = be;
        m->type = type;
        m->version = 1;
        m->serial = 1;
        buf_grow(&m->h, 16);
        memset(m->h.b, 0, 16);
        m->h.n = 16;
}

void field(Msg *m, uint8_t code, const char *sig)
{
        buf_pad(&m->h, 8);
        buf_u8(&m->h, code);
        buf_sig(&m->h, sig);
}

void field_str(Msg *m, uint8_t code, char type, const char *s)
{
        field(m, code, (const char[]){ type, 0 });
        buf_str(&m->h, s);
}

void field_u32(Msg *m, uint8_t code, uint32_t v)
{
        field(m, code, "u");
        buf_u32(&m->h, v);
}

void field_sig(Msg *m, uint8_t code, const char *s)
{
        field(m, code, "g");
        buf_sig(&m->h, s);
}

uint8_t *msg_finish(Msg *m, size_t *ret_len)
{
        size_t fields, total;
        uint8_t *p;
        Buf fixed = { .be = m->h.be };

        if (m->trailing_pad)
                buf_pad(&m->h, 8);
        fields = m->h.n - 16;
        total = 16 + ALIGN_TO(fields, 8) + m->body.n;
        p = calloc(1, total + 8);
        assert_non_null(p);
        buf_u8(&fixed, m->byte_order ? m->byte_order : m->h.be ? 'B' : 'l');
        buf_u8(&fixed, m->type);
        buf_u8(&fixed, m->flags);
        buf_u8(&fixed, m->version);
        buf_u32(&fixed, (uint32_t)((int64_t)m->body.n + m->body_delta));
        buf_u32(&fixed, m->serial);
        buf_u32(&fixed, m->fields_size ? m->fields_size : (uint32_t)fields);
        memcpy(p, fixed.b, 16);
        free(fixed.b);
        memcpy(p + 16, m->h.b + 16, fields);
        memset(p + 16 + fields, m->header_fill, ALIGN_TO(fields, 8) - fields);
        if (m->body.n)
                memcpy(p + 16 + ALIGN_TO(fields, 8), m->body.b, m->body.n);
        *ret_len = m->cut ? m->cut : total;
        return p;
}

void msg_free(Msg *m)
{
        free(m->h.b);
        free(m->body.b);
        m->h.b = m->body.b = NULL;
}

void base_call(Msg *m, unsigned omit)
{
        msg_start(m, DBUS_MESSAGE_METHOD_CALL);
        if (!(omit & NO(PATH)))
                field_str(m, PATH, 'o', "/org/fhash/Hasher1");
        if (!(omit & NO(INTERFACE)))
                field_str(m, INTERFACE, 's', "org.fhash.Hasher1.Manager");
        if (!(omit & NO(MEMBER)))
                field_str(m, MEMBER, 's', "HashFds");
        if (!(omit & NO(DESTINATION)))
                field_str(m, DESTINATION, 's', "org.fhash.Hasher1");
        if (!(omit & NO(SIGNATURE))) {
                field_sig(m, SIGNATURE, "ahs");
                buf_u32(&m->body, 8);
                buf_u32(&m->body, 0);
                buf_u32(&m->body, 1);
                buf_str(&m->body, "sha256");
        }
        if (!(omit & NO(UNIX_FDS))) {
                field_u32(m, UNIX_FDS, 2);
                m->n_fds = 2;
        }
}

void base_return(Msg *m, unsigned omit)
{
        msg_start(m, DBUS_MESSAGE_METHOD_RETURN);
        if (!(omit & NO(REPLY_SERIAL)))
                field_u32(m, REPLY_SERIAL, 7);
        if (!(omit & NO(DESTINATION)))
                field_str(m, DESTINATION, 's', ":1.42");
        if (!(omit & NO(SENDER)))
                field_str(m, SENDER, 's', ":1.5");
        if (!(omit & NO(SIGNATURE))) {
                field_sig(m, SIGNATURE, "o");
                buf_str(&m->body, "/org/fhash/Hasher1/job/7");
        }
}

void base_error(Msg *m, unsigned omit)
{
        msg_start(m, DBUS_MESSAGE_ERROR);
        if (!(omit & NO(ERROR_NAME)))
                field_str(m, ERROR_NAME, 's', "org.fhash.Error.Busy");
        if (!(omit & NO(REPLY_SERIAL)))
                field_u32(m, REPLY_SERIAL, 7);
        if (!(omit & NO(DESTINATION)))
                field_str(m, DESTINATION, 's', ":1.42");
        if (!(omit & NO(SIGNATURE))) {
                field_sig(m, SIGNATURE, "s");
                buf_str(&m->body, "fhashd is busy");
        }
}

void base_signal(Msg *m, unsigned omit)
{
        msg_start(m, DBUS_MESSAGE_SIGNAL);
        if (!(omit & NO(PATH)))
                field_str(m, PATH, 'o', "/org/fhash/Hasher1/job/7");
        if (!(omit & NO(INTERFACE)))
                field_str(m, INTERFACE, 's', "org.fhash.Hasher1.Job");
        if (!(omit & NO(MEMBER)))
                field_str(m, MEMBER, 's', "FilesHashed");
        if (!(omit & NO(SENDER)))
                field_str(m, SENDER, 's', ":1.5");
        if (!(omit & NO(SIGNATURE))) {
                field_sig(m, SIGNATURE, "u");
                buf_u32(&m->body, 3);
        }
}
