/* SPDX-License-Identifier: MIT */
/* b3-hash.c: b3sum's hashing of one input, its output line, and names written as Rust writes them */
#include <string.h>
#include <unistd.h>

#include "basic/utf8.h"
#include "hash/oneshot.h"
#include "sum/b3-hash.h"

/* Rust's to_string_lossy(): each maximal invalid UTF-8 sequence becomes U+FFFD. */
static void add_lossy(Line *l, const char *s)
{
        const unsigned char *p = (const unsigned char *)s;

        while (*p) {
                size_t n = utf8_char_len(p);

                if (n > 0) {
                        line_add(l, p, n);
                        p += n;
                        continue;
                }
                line_adds(l, "\xef\xbf\xbd");
                /* Rust replaces the longest prefix of a valid sequence with one U+FFFD. */
                size_t k = 1;
                if (p[0] >= 0xc2 && p[0] <= 0xf4) {
                        size_t want = p[0] < 0xe0 ? 2 : p[0] < 0xf0 ? 3 : 4;
                        while (k < want && (p[k] & 0xc0) == 0x80 &&
                               !(k == 1 && ((p[0] == 0xe0 && p[1] < 0xa0) || (p[0] == 0xed && p[1] > 0x9f) ||
                                            (p[0] == 0xf0 && p[1] < 0x90) || (p[0] == 0xf4 && p[1] > 0x8f))))
                                k++;
                }
                p += k;
        }
}

/* The name as b3sum writes it; true if it needed escaping. b3sum 1.2.0 escaped '\\' and '\n' but
 * wrote a '\r' as it is. */
static bool add_name(const B3 *b, Line *l, const char *name)
{
        Line lossy = {};
        bool escape;

        add_lossy(&lossy, name);
        escape = lossy.buf && strpbrk(lossy.buf, b->old ? "\\\n" : "\\\n\r");
        for (size_t i = 0; lossy.buf && i < lossy.n; i++) {
                char c = lossy.buf[i];

                if (escape && c == '\\')
                        line_adds(l, "\\\\");
                else if (escape && c == '\n')
                        line_adds(l, "\\n");
                else if (escape && c == '\r' && !b->old)
                        line_adds(l, "\\r");
                else
                        line_addc(l, c);
        }
        line_free(&lossy);
        return escape;
}

void b3_add_os_error(Line *l, int err)
{
        line_addf(l, "%s (os error %d)", strerror(err), err);
}

int b3_hash_input(B3 *b, const char *path, int *ret_err)
{
        _cleanup_close_ int fd = -EBADF;
        int r;

        *ret_err = 0;
        if (streq(path, "-") && b->keyed)
                return -EBADF; /* said by the caller: "Cannot open `-` in keyed mode" */
        fd = oneshot_open(path);
        if (fd < 0) {
                *ret_err = -fd;
                return fd;
        }
        r = hash_ctx_init_params(b->ctx, HASH_BLAKE3, &b->params);
        if (r >= 0)
                r = oneshot_hash_fd(b->ctx, fd, b->buf, B3_BUF_SIZE, NULL);
        if (r < 0)
                *ret_err = -r;
        return r;
}

/* length bytes of output from seek, as hex (or raw) into the line. */
static void add_output(B3 *b, bool raw)
{
        uint8_t block[64];
        uint64_t left = b->length, pos = b->seek;

        while (left > 0) {
                size_t n = left < sizeof(block) ? (size_t)left : sizeof(block);

                (void)hash_ctx_xof(b->ctx, pos, block, n);
                if (raw)
                        line_add(&b->line, block, n);
                else
                        line_add_hex(&b->line, block, n);
                pos += n;
                left -= n;
                /* A long raw output goes out as it is made rather than all at once. */
                if (raw && b->line.n >= B3_BUF_SIZE)
                        (void)persona_out(&b->line);
        }
}

static void report_error(B3 *b, const char *path, int err)
{
        Line l = {};

        line_adds(&l, "b3sum: ");
        add_lossy(&l, path);
        line_adds(&l, ": ");
        if (err == EBADF && streq(path, "-") && b->keyed)
                line_adds(&l, "Cannot open `-` in keyed mode");
        else
                b3_add_os_error(&l, err);
        line_addc(&l, '\n');
        (void)line_write(&l, STDERR_FILENO);
        line_free(&l);
}

bool b3_hash_one(B3 *b, const char *path)
{
        int err;

        if (b3_hash_input(b, path, &err) < 0) {
                report_error(b, path, err ? err : EBADF);
                return false;
        }
        if (b->old && b->length_bad) {
                /* 1.2.0 parsed --length only when it came to write a digest. */
                Line l = {};

                line_adds(&l, "b3sum: ");
                add_lossy(&l, path);
                line_adds(&l, ": Failed to parse length.\n");
                (void)line_write(&l, STDERR_FILENO);
                line_free(&l);
                return false;
        }
        if (b->raw) {
                add_output(b, true);
                (void)persona_out(&b->line);
                return true;
        }
        if (b->no_names) {
                add_output(b, false);
                line_addc(&b->line, '\n');
                (void)persona_out(&b->line);
                return true;
        }
        Line name = {};
        bool escape = add_name(b, &name, path);

        if (escape)
                line_addc(&b->line, '\\');
        if (b->tag) {
                line_adds(&b->line, "BLAKE3 (");
                line_add(&b->line, name.buf ? name.buf : "", name.n);
                line_adds(&b->line, ") = ");
                add_output(b, false);
        } else {
                add_output(b, false);
                line_adds(&b->line, "  ");
                line_add(&b->line, name.buf ? name.buf : "", name.n);
        }
        line_addc(&b->line, '\n');
        (void)persona_out(&b->line);
        line_free(&name);
        return true;
}
