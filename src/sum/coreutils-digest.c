/* SPDX-License-Identifier: MIT */
/* coreutils-digest.c: the coreutils tools' hashing of one input, and its result line */
#include <inttypes.h>
#include <string.h>

#include <nettle/base64.h>

#include "hash/oneshot.h"
#include "sum/coreutils-digest.h"

static int feed_sum(const void *data, size_t n, void *userdata)
{
        sum_update(userdata, data, n);
        return 0;
}

/* The digest the current algorithm and length name. */
static HashAlgo digest_algo(const Cu *cu, HashParams *ret)
{
        size_t bytes = (size_t)(cu->digest_length >> 3);

        *ret = HASH_PARAMS_DEFAULT;
        if (cu->build == BUILD_BLAKE2 || cu->algo == CK_BLAKE2B) {
                ret->out_len = (uint32_t)bytes;
                return HASH_BLAKE2B;
        }
        if (cu->algo == CK_SHA2)
                return bytes == 28 ? HASH_SHA224 : bytes == 32 ? HASH_SHA256 : bytes == 48 ? HASH_SHA384 : HASH_SHA512;
        if (cu->algo == CK_SHA3)
                return bytes == 28   ? HASH_SHA3_224
                       : bytes == 32 ? HASH_SHA3_256
                       : bytes == 48 ? HASH_SHA3_384
                                     : HASH_SHA3_512;
        return cu_algos[cu->algo].algo;
}

/* Reads and hashes one input: 0; -ENOENT with missing set for a file --ignore-missing skips
 * (only in check mode); another -errno after saying it, as "PROG: NAME: REASON". */
int cu_digest_file(Cu *cu, const char *name, CuResult *res, bool *missing)
{
        _cleanup_close_ int fd = -EBADF;
        int r;

        *missing = false;
        fd = oneshot_open(name);
        if (fd < 0) {
                if (cu->ignore_missing && fd == -ENOENT && !streq(name, "-")) {
                        *missing = true;
                        return -ENOENT;
                }
                cu_err_name(cu, name, -fd);
                return fd;
        }
        if (cu->build == BUILD_SUM || cu->algo <= CK_CRC32B) {
                SumState s;
                SumKind k = cu->build == BUILD_SUM ? cu->sum_kind
                            : cu->algo == CK_BSD   ? SUM_BSD
                            : cu->algo == CK_SYSV  ? SUM_SYSV
                            : cu->algo == CK_CRC   ? SUM_CRC
                                                   : SUM_CRC32B;

                sum_init(&s, k);
                r = oneshot_read_fd(fd, cu->buf, CU_BUF_SIZE, feed_sum, &s, &res->size);
                /* cksum 9.0 to 9.3 did not see read errors of its CRC (9.4 NEWS): a directory gave
                 * the CRC of what was read, nothing. */
                if (r < 0 && cu->old && cu->build == BUILD_CKSUM && cu->algo == CK_CRC) {
                        res->size = s.size;
                        r = 0;
                }
                res->sum = sum_value(&s);
        } else {
                HashParams p;
                HashAlgo a = digest_algo(cu, &p);

                r = hash_ctx_init_params(cu->ctx, a, &p);
                if (r >= 0)
                        r = oneshot_hash_fd(cu->ctx, fd, cu->buf, CU_BUF_SIZE, &res->size);
                if (r >= 0)
                        r = hash_ctx_final(cu->ctx, res->digest);
        }
        if (r < 0)
                cu_err_name(cu, name, -r);
        return r;
}

static void add_base64(Line *l, const uint8_t *d, size_t n)
{
        char b64[B64_LEN(HASH_DIGEST_MAX) + 1];

        base64_encode_raw(b64, n, d);
        line_add(l, b64, B64_LEN(n));
}

static void write_raw(Cu *cu, const void *d, size_t n)
{
        line_add(&cu->line, d, n);
        (void)persona_out(&cu->line);
}

/* One result line, as coreutils' output_file(), output_crc(), output_bsd() and output_sysv(). */
void cu_output(Cu *cu, const char *name, int binary, const CuResult *res)
{
        Line *l = &cu->line;
        bool sum_like = cu->build == BUILD_SUM || (cu->build == BUILD_CKSUM && cu->algo <= CK_CRC32B);
        size_t bytes = (size_t)(cu->digest_length >> 3);

        if (sum_like) {
                bool crc = cu->build == BUILD_CKSUM && (cu->algo == CK_CRC || cu->algo == CK_CRC32B);
                bool bsd = cu->build == BUILD_SUM ? cu->sum_kind == SUM_BSD : cu->algo == CK_BSD;

                if (cu->raw) {
                        /* Big-endian: 4 bytes of a CRC, 2 of a sum. */
                        uint8_t be[4] = { (uint8_t)(res->sum >> 24), (uint8_t)(res->sum >> 16),
                                          (uint8_t)(res->sum >> 8), (uint8_t)res->sum };
                        write_raw(cu, crc ? be : be + 2, crc ? 4 : 2);
                        return;
                }
                if (crc)
                        line_addf(l, "%" PRIu32 " %" PRIu64, res->sum, res->size);
                else if (bsd)
                        line_addf(l, "%05" PRIu32 " %5" PRIu64, res->sum, DIV_ROUND_UP(res->size, 1024));
                else
                        line_addf(l, "%" PRIu32 " %" PRIu64, res->sum, DIV_ROUND_UP(res->size, 512));
                if (cu->args) {
                        line_addc(l, ' ');
                        line_adds(l, name);
                }
                line_addc(l, cu->delim);
                (void)persona_out(l);
                return;
        }

        if (cu->raw) {
                write_raw(cu, res->digest, bytes);
                return;
        }
        bool escape = cu->delim == '\n' && strpbrk(name, "\\\n\r");
        if (escape)
                line_addc(l, '\\');
        if (cu->prefix_tag) {
                if (cu->build == BUILD_CKSUM && cu->algo == CK_SHA2)
                        line_addf(l, "SHA%u", (unsigned)cu->digest_length);
                else
                        line_adds(l, cu_type_string(cu));
                if ((cu->build == BUILD_BLAKE2 || (cu->build == BUILD_CKSUM && cu->algo == CK_BLAKE2B)) &&
                    cu->digest_length < BLAKE2B_MAX_BITS)
                        line_addf(l, "-%u", (unsigned)cu->digest_length);
                if (cu->build == BUILD_CKSUM && cu->algo == CK_SHA3)
                        line_addf(l, "-%u", (unsigned)cu->digest_length);
                line_adds(l, " (");
                line_add_escaped(l, name, escape);
                line_adds(l, ") = ");
        }
        if (cu->base64)
                add_base64(l, res->digest, bytes);
        else
                line_add_hex(l, res->digest, bytes);
        if (!cu->prefix_tag) {
                line_addc(l, ' ');
                /* cksum 9.1 wrote untagged lines in binary mode, always with two spaces. */
                line_addc(l, binary && !(cu->old && cu->build == BUILD_CKSUM) ? '*' : ' ');
                line_add_escaped(l, name, escape);
        }
        line_addc(l, cu->delim);
        (void)persona_out(l);
}
