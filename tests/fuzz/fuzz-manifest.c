/* SPDX-License-Identifier: MIT */
/* fuzz-manifest.c: the check-file parser on arbitrary bytes; every entry must survive a round trip */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "hash/hash.h"
#include "basic/macro.h"
#include "ctl/manifest.h"
#include "ctl/output.h"

/* Bytes that matter to the check-file parser (fuzz.h). */
const char fuzz_interesting[] = "\\\n\r\t ()=*#_-0123456789abcdefABCDEFSHA256BLAKE3XXH3MD5\0\xff\xc3";
const size_t fuzz_interesting_size = sizeof(fuzz_interesting) - 1;

/* A parsed entry written back the way fhashctl writes it must parse to the same entry. */
static void round_trip(const ManifestEntry *e)
{
        _cleanup_free_ char *buf = NULL;
        size_t size = 0;
        ManifestEntry back = {};
        FILE *f;

        f = open_memstream(&buf, &size);
        if (!f)
                abort();
        if (output_write_digest(f, OUTPUT_TAGGED, false, e->algo, e->name, e->hex) < 0)
                abort();
        if (fclose(f) != 0 || size == 0)
                abort();
        if (manifest_parse_line(buf, size - 1, _HASH_ALGO_INVALID, &back) != 1)
                abort();
        if (back.algo != e->algo || strcmp(back.name, e->name) != 0 || strcmp(back.hex, e->hex) != 0)
                abort();
        free(back.name);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        static const HashAlgo algos[] = { _HASH_ALGO_INVALID, HASH_SHA256, HASH_BLAKE3, HASH_XXH3 };

        for (int zero = 0; zero < 2; zero++)
                for (size_t a = 0; a < ELEMENTSOF(algos); a++) {
                        Manifest *m = NULL;

                        if (manifest_parse((const char *)data, size, algos[a], zero, &m) < 0)
                                continue; /* -ENOMEM only */
                        for (size_t i = 0; i < m->n_entries; i++) {
                                const ManifestEntry *e = &m->entries[i];

                                if (!e->name[0] || strlen(e->hex) != 2 * hash_algo_digest_size(e->algo))
                                        abort();
                                if (algos[a] >= 0 && e->algo != algos[a])
                                        abort();
                                round_trip(e);
                        }
                        manifest_free(m);
                }
        return 0;
}
