/* SPDX-License-Identifier: MIT */
/* xxh-hash.c: xxHash's algorithms as xxhsum names them, and hashing one input into its line */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "hash/oneshot.h"
#include "sum/xxh-hash.h"

const XxhAlgoInfo xxh_algos[_XA_MAX] = {
        [XA_32] = { "XXH32", "XXH32_LE", 4, HASH_XXH32 },
        [XA_64] = { "XXH64", "XXH64_LE", 8, HASH_XXH64 },
        [XA_128] = { "XXH128", "XXH128_LE", 16, HASH_XXH128 },
        [XA_3] = { "XXH3", "XXH3_LE", 8, HASH_XXH3 },
};

bool xxh_name_needs_escape(const Xxh *x, const char *name)
{
        return !x->old && strpbrk(name, "\\\n\r");
}

static void add_digest(Xxh *x, const uint8_t *d, size_t n, bool reverse)
{
        for (size_t i = 0; i < n; i++)
                line_add_hex(&x->line, d + (reverse ? n - 1 - i : i), 1);
}

int xxh_hash_fd(Xxh *x, int fd, XxhAlgo a, uint8_t *digest)
{
        int r = hash_ctx_init(x->ctx, xxh_algos[a].algo);

        if (r >= 0)
                r = oneshot_hash_fd(x->ctx, fd, x->buf, XXH_BUF_SIZE, NULL);
        if (r >= 0)
                r = hash_ctx_final(x->ctx, digest);
        return r;
}

static bool is_directory(const char *path)
{
        struct stat st;
        return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

void xxh_read_failure(Xxh *x)
{
        fprintf(stderr, "Error: a failure occurred reading the input file.\n");
        exit(persona_finish("xxhsum", 1));
}

int xxh_hash_file(Xxh *x, const char *name)
{
        _cleanup_close_ int fd = -EBADF;
        uint8_t d[16];
        bool bsd = x->tag || (x->old && x->algo == XA_3);
        const char *shown = name;
        bool escape;

        if (streq(name, "-")) {
                fd = oneshot_open("-");
                shown = "stdin";
        } else {
                if (is_directory(name)) {
                        fprintf(stderr, "xxhsum: %s: Is a directory \n", name);
                        return 1;
                }
                fd = oneshot_open(name);
                if (fd < 0) {
                        fprintf(stderr, "Error: Could not open '%s': %s. \n", name, strerror(-fd));
                        return 1;
                }
        }
        if (fd < 0 || xxh_hash_fd(x, fd, x->algo, d) < 0)
                xxh_read_failure(x);

        escape = xxh_name_needs_escape(x, shown);
        if (escape)
                line_addc(&x->line, '\\');
        if (bsd) {
                line_adds(&x->line, x->little_endian ? xxh_algos[x->algo].le_name : xxh_algos[x->algo].name);
                line_adds(&x->line, " (");
                line_add_escaped(&x->line, shown, escape);
                line_adds(&x->line, ") = ");
                add_digest(x, d, xxh_algos[x->algo].len, x->little_endian);
        } else {
                if (x->algo == XA_3)
                        line_adds(&x->line, "XXH3_");
                add_digest(x, d, xxh_algos[x->algo].len, x->little_endian);
                line_adds(&x->line, "  ");
                line_add_escaped(&x->line, shown, escape);
        }
        line_addc(&x->line, '\n');
        (void)persona_out(&x->line);
        return 0;
}
