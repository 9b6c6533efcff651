/* SPDX-License-Identifier: MIT */
/* md-nettle.c: MdCtx over nettle's low-level digests (see md.h) */
#include <stdlib.h>
#include <string.h>

#include <nettle/md5.h>
#include <nettle/nettle-meta.h>
#include <nettle/sha1.h>
#include <nettle/sha2.h>
#include <nettle/sha3.h>
#include <nettle/sm3.h>

#include "hash/md.h"

/* Every state these digests need, so that one MdCtx serves them all without an allocation per
 * file. */
union md_state {
        struct md5_ctx md5;
        struct sha1_ctx sha1;
        struct sha256_ctx sha256;
        struct sha512_ctx sha512;
        struct sha3_224_ctx sha3_224;
        struct sha3_256_ctx sha3_256;
        struct sha3_384_ctx sha3_384;
        struct sha3_512_ctx sha3_512;
        struct sm3_ctx sm3;
};

struct MdCtx {
        const struct nettle_hash *h;
        union md_state state;
};

static const struct nettle_hash *md_table(HashAlgo a)
{
        switch (a) {
        case HASH_MD5:
                return &nettle_md5;
        case HASH_SHA1:
                return &nettle_sha1;
        case HASH_SHA224:
                return &nettle_sha224;
        case HASH_SHA256:
                return &nettle_sha256;
        case HASH_SHA384:
                return &nettle_sha384;
        case HASH_SHA512:
                return &nettle_sha512;
        case HASH_SHA3_224:
                return &nettle_sha3_224;
        case HASH_SHA3_256:
                return &nettle_sha3_256;
        case HASH_SHA3_384:
                return &nettle_sha3_384;
        case HASH_SHA3_512:
                return &nettle_sha3_512;
        case HASH_SM3:
                return &nettle_sm3;
        default:
                return NULL;
        }
}

int md_global_init(void)
{
        /* Nothing to fetch: nettle's tables are constant and it picks SHA-NI/AVX code in its own
         * constructor (Debian builds it with --enable-fat). */
        return 0;
}

const char *md_backend(void)
{
        return "nettle";
}

int md_new(MdCtx **ret)
{
        MdCtx *m = calloc(1, sizeof(*m));

        if (!m)
                return -ENOMEM;
        *ret = m;
        return 0;
}

MdCtx *md_free(MdCtx *m)
{
        free(m);
        return NULL;
}

int md_init(MdCtx *m, HashAlgo a)
{
        const struct nettle_hash *h = md_table(a);

        if (!h || !hash_algo_evp_name(a))
                return -EINVAL;
        /* The union is the size of the largest state: a digest this file names always fits. */
        if (h->context_size > sizeof(m->state) || h->digest_size != hash_algo_digest_size(a))
                return -EOPNOTSUPP;
        h->init(&m->state);
        m->h = h;
        return 0;
}

int md_update(MdCtx *m, const void *data, size_t n)
{
        if (!m->h)
                return -EINVAL;
        m->h->update(&m->state, n, data);
        return 0;
}

int md_final(MdCtx *m, uint8_t *out)
{
        if (!m->h)
                return -EINVAL;
        m->h->digest(&m->state, m->h->digest_size, out);
        return 0;
}
