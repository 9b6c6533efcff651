/* SPDX-License-Identifier: MIT */
/* fuzz-driver.c: runs a libFuzzer entry point without libFuzzer (gcc, no clang): the corpus, then N
 * mutated inputs from a fixed seed, so the short run in `meson test` is repeatable */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "basic/macro.h"

static uint64_t rng = 0x243f6a8885a308d3u;

static uint32_t next(void)
{
        /* xorshift64*: deterministic and good enough to pick mutations. */
        rng ^= rng >> 12;
        rng ^= rng << 25;
        rng ^= rng >> 27;
        return (uint32_t)((rng * 0x2545f4914f6cdd1du) >> 32);
}

typedef struct Input {
        uint8_t *data;
        size_t size;
} Input;

static int load(const char *dir, Input **ret, size_t *ret_n)
{
        struct dirent **list = NULL;
        Input *in = NULL;
        size_t n = 0;
        int k;

        k = scandir(dir, &list, NULL, alphasort); /* sorted: same order on every machine */
        if (k < 0)
                return -1;
        in = calloc((size_t)k + 1, sizeof(*in));
        if (!in)
                abort();
        for (int i = 0; i < k; i++) {
                _cleanup_free_ char *p = NULL;
                FILE *f;
                long sz;

                if (list[i]->d_name[0] == '.' || asprintf(&p, "%s/%s", dir, list[i]->d_name) < 0)
                        goto next;
                f = fopen(p, "rb");
                if (!f)
                        goto next;
                if (fseek(f, 0, SEEK_END) == 0 && (sz = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
                        in[n].data = malloc((size_t)sz + 1);
                        if (!in[n].data)
                                abort();
                        in[n].size = fread(in[n].data, 1, (size_t)sz, f);
                        n++;
                }
                fclose(f);
        next:
                free(list[i]);
        }
        free(list);
        *ret = in;
        *ret_n = n;
        return 0;
}

static size_t mutate(uint8_t *buf, size_t size, size_t cap, const Input *corpus, size_t n)
{
        unsigned rounds = 1 + next() % 8;

        for (unsigned r = 0; r < rounds; r++) {
                size_t pos = size ? next() % size : 0;

                switch (next() % 6) {
                case 0: /* flip a bit */
                        if (size)
                                buf[pos] ^= (uint8_t)(1u << (next() % 8));
                        break;
                case 1: /* overwrite with an interesting byte */
                        if (size)
                                buf[pos] = (uint8_t)fuzz_interesting[next() % fuzz_interesting_size];
                        break;
                case 2: /* insert one */
                        if (size < cap) {
                                memmove(buf + pos + 1, buf + pos, size - pos);
                                buf[pos] = (uint8_t)fuzz_interesting[next() % fuzz_interesting_size];
                                size++;
                        }
                        break;
                case 3: { /* delete a range */
                        size_t len = size ? next() % (size - pos + 1) : 0;
                        memmove(buf + pos, buf + pos + len, size - pos - len);
                        size -= len;
                        break;
                }
                case 4: { /* duplicate a range */
                        size_t len = size ? next() % (size - pos + 1) : 0;
                        len = MIN(len, cap - size);
                        /* The moved tail leaves [pos, pos+len) in place: now it appears twice. */
                        memmove(buf + pos + len, buf + pos, size - pos);
                        size += len;
                        break;
                }
                default: { /* splice in part of another corpus file */
                        const Input *o = &corpus[next() % n];
                        size_t from = o->size ? next() % o->size : 0;
                        size_t len = MIN(o->size - from, cap - size);
                        len = len ? next() % (len + 1) : 0;
                        memmove(buf + pos + len, buf + pos, size - pos);
                        memcpy(buf + pos, o->data + from, len);
                        size += len;
                }
                }
        }
        return size;
}

int main(int argc, char *argv[])
{
        unsigned long iterations = argc > 2 ? strtoul(argv[2], NULL, 10) : 10000;
        const size_t cap = 8192;
        Input *corpus;
        uint8_t *buf;
        size_t n;

        if (argc < 2 || load(argv[1], &corpus, &n) < 0 || n == 0) {
                fprintf(stderr, "usage: %s CORPUS-DIR [ITERATIONS] (corpus missing or empty)\n", argv[0]);
                return 77;
        }
        buf = malloc(cap);
        if (!buf)
                abort();
        for (size_t i = 0; i < n; i++)
                LLVMFuzzerTestOneInput(corpus[i].data, corpus[i].size);
        for (unsigned long it = 0; it < iterations; it++) {
                const Input *base = &corpus[next() % n];
                size_t size = MIN(base->size, cap);

                memcpy(buf, base->data, size);
                size = mutate(buf, size, cap, corpus, n);
                /* An exact-size heap copy, so that ASan catches a read one past the end. */
                uint8_t *exact = malloc(size ? size : 1);
                if (!exact)
                        abort();
                memcpy(exact, buf, size);
                LLVMFuzzerTestOneInput(exact, size);
                free(exact);
        }
        printf("%zu corpus inputs and %lu mutations: no crash\n", n, iterations);
        for (size_t i = 0; i < n; i++)
                free(corpus[i].data);
        free(corpus);
        free(buf);
        return 0;
}
