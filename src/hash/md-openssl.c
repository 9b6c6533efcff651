/* SPDX-License-Identifier: MIT */
/* md-openssl.c: MdCtx over OpenSSL 3's EVP digests (see md.h) */
#include <openssl/evp.h>
#include <pthread.h>
#include <stdlib.h>

#include "hash/md.h"

/* Fetched once and shared read-only by every context: an implicit fetch inside each
 * EVP_DigestInit would take the provider store's lock and look the name up again for every file. */
static pthread_once_t md_once = PTHREAD_ONCE_INIT;
static EVP_MD *md_evp[_HASH_ALGO_MAX];

struct MdCtx {
        EVP_MD_CTX *evp;
        HashAlgo algo;
};

static void md_setup(void)
{
        /* A digest the providers lack (MD5 under a FIPS-only configuration) stays NULL and only
         * that algorithm fails, in md_init(). The fetched digests live as long as the process:
         * contexts in every thread point at them. */
        for (HashAlgo a = 0; a < _HASH_ALGO_MAX; a++)
                if (hash_algo_evp_name(a))
                        md_evp[a] = EVP_MD_fetch(NULL, hash_algo_evp_name(a), NULL);
}

int md_global_init(void)
{
        int r = pthread_once(&md_once, md_setup);
        return r != 0 ? -r : 0;
}

const char *md_backend(void)
{
        return "openssl";
}

int md_new(MdCtx **ret)
{
        MdCtx *m;
        int r;

        r = md_global_init();
        if (r < 0)
                return r;
        m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        m->algo = _HASH_ALGO_INVALID;
        m->evp = EVP_MD_CTX_new();
        if (!m->evp) {
                free(m);
                return -ENOMEM;
        }
        *ret = m;
        return 0;
}

MdCtx *md_free(MdCtx *m)
{
        if (!m)
                return NULL;
        EVP_MD_CTX_free(m->evp);
        free(m);
        return NULL;
}

int md_init(MdCtx *m, HashAlgo a)
{
        if (a < 0 || a >= _HASH_ALGO_MAX || !hash_algo_evp_name(a))
                return -EINVAL;
        if (!md_evp[a])
                return -EOPNOTSUPP;
        /* Re-initialising the same EVP_MD_CTX with a prefetched digest keeps the context and the
         * fetch out of the per-file path. OpenSSL 3.0 itself still frees and re-creates the
         * provider's small state here (one malloc per file, not per buffer); 3.1 reuses it when
         * the digest is unchanged (openssl#16947). */
        if (EVP_DigestInit_ex2(m->evp, md_evp[a], NULL) != 1)
                return -EIO;
        m->algo = a;
        return 0;
}

int md_update(MdCtx *m, const void *data, size_t n)
{
        return EVP_DigestUpdate(m->evp, data, n) == 1 ? 0 : -EIO;
}

int md_final(MdCtx *m, uint8_t *out)
{
        unsigned len = 0;

        if (EVP_DigestFinal_ex(m->evp, out, &len) != 1 || len != hash_algo_digest_size(m->algo))
                return -EIO;
        return 0;
}
