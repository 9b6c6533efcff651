/* SPDX-License-Identifier: MIT */
/* fuzz-manifest.c: the check-file parser on arbitrary bytes; every entry must survive a round trip; the
 * mtree parser on the same bytes as lines */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "ctl/macro.h"
#include "ctl/manifest.h"
#include "ctl/output.h"

/* Bytes that matter to the check-file parser (fuzz.h). */
const char fuzz_interesting[] = "\\\n\r\t ()=*#_-0123456789abcdefABCDEFSHA256BLAKE3XXH3MD5\0\xff\xc3/.";
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
        if (manifest_parse_line(buf, size - 1, NULL, &back) != 1)
                abort();
        if (!algo_is(back.algo, e->algo) || strcmp(back.name, e->name) != 0 || strcmp(back.hex, e->hex) != 0)
                abort();
        free(back.name);
}

/* Every line as an mtree entry, one parser for all (its /set and directory carry over): an entry has
 * a name without NUL and a digest of its algorithm's length, or none. */
static void fuzz_mtree(const char *s, size_t size)
{
        MtreeParser *p = NULL;

        if (mtree_parser_new(&p) < 0)
                return;
        for (size_t off = 0; off < size;) {
                const char *nl = memchr(s + off, '\n', size - off);
                size_t len = nl ? (size_t)(nl - (s + off)) : size - off;
                char *name = NULL, hex[ALGO_HEX_MAX];
                const char *a = NULL;
                MtreeInfo info = {};

                if (mtree_parse_line(p, s + off, len, NULL, &name, &a, hex, &info) == 1) {
                        if (!name[0] && len > 0 && s[off] != '\\')
                                abort();
                        if (a ? strlen(hex) != 2 * algo_digest_size(a) : hex[0] != '\0')
                                abort();
                        if (info.link && info.type != MTREE_LINK)
                                abort();
                        free(name);
                        free(info.link);
                }
                off += len + (nl ? 1 : 0);
        }
        mtree_parser_free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        fuzz_mtree((const char *)data, size);
        static const char *const algos[] = { NULL, "sha256", "blake3", "xxh3" };

        for (int zero = 0; zero < 2; zero++)
                for (size_t a = 0; a < ELEMENTSOF(algos); a++) {
                        Manifest *m = NULL;

                        if (manifest_parse((const char *)data, size, algos[a], zero, &m) < 0)
                                continue; /* -ENOMEM only */
                        for (size_t i = 0; i < m->n_entries; i++) {
                                const ManifestEntry *e = &m->entries[i];

                                if (!e->name[0] || strlen(e->hex) != 2 * algo_digest_size(e->algo))
                                        abort();
                                if (algos[a] && !algo_is(e->algo, algos[a]))
                                        abort();
                                round_trip(e);
                        }
                        manifest_free(m);
                }
        return 0;
}
