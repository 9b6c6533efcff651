/* SPDX-License-Identifier: MIT */
/* bench-blake3-tree: one thread, BLAKE3 as 1 MiB subtree pieces + merge vs the reference hasher */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hash/blake3-tree.h"
#include "basic/macro.h"

#define PIECE (1u << 20)
#define ROUNDS 5u

static double now(void)
{
        struct timespec ts;

        (void)clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The reference hasher fed 1 MiB at a time, the calls the engine makes for one file today. */
static double bench_reference(const uint8_t *buf, size_t size, uint8_t out[BLAKE3_OUT_LEN])
{
        double t0 = now();
        blake3_hasher h;

        blake3_hasher_init(&h);
        for (size_t off = 0; off < size; off += PIECE)
                blake3_hasher_update(&h, buf + off, MIN((size_t)PIECE, size - off));
        blake3_hasher_finalize(&h, out, BLAKE3_OUT_LEN);
        return now() - t0;
}

static double bench_tree(const uint8_t *buf, size_t size, uint8_t out[BLAKE3_OUT_LEN])
{
        double t0 = now();

        blake3_tree_hash(buf, size, PIECE, out);
        return now() - t0;
}

int main(int argc, char *argv[])
{
        _cleanup_free_ uint8_t *buf = NULL;
        uint8_t d_ref[BLAKE3_OUT_LEN], d_tree[BLAKE3_OUT_LEN];
        double best_ref = 1e30, best_tree = 1e30;
        uint64_t x = 0x9e3779b97f4a7c15u;
        size_t mib = 1024, size;

        /* An optional size in MiB, for a quick look on a busy machine. */
        if (argc > 1) {
                char *end;
                unsigned long v = strtoul(argv[1], &end, 10);
                if (*end || v < 2 || v > 65536) {
                        fprintf(stderr, "usage: %s [MiB >= 2]\n", argv[0]);
                        return 2;
                }
                mib = v;
        }
        size = mib << 20;
        buf = malloc(size);
        if (!buf) {
                fprintf(stderr, "bench-blake3-tree: cannot allocate %zu MiB\n", mib);
                return 1;
        }
        /* Random-looking data, written once so every page is faulted in before timing. */
        for (size_t i = 0; i + 8 <= size; i += 8) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                memcpy(buf + i, &x, 8);
        }

        /* Alternate the two and keep the best of each: on a shared machine the best run is the
         * one least disturbed by others. */
        for (unsigned r = 0; r < ROUNDS; r++) {
                best_ref = MIN(best_ref, bench_reference(buf, size, d_ref));
                best_tree = MIN(best_tree, bench_tree(buf, size, d_tree));
                /* A speed number for a wrong result would be worthless. */
                if (memcmp(d_ref, d_tree, BLAKE3_OUT_LEN) != 0) {
                        fprintf(stderr, "bench-blake3-tree: digests differ\n");
                        return 1;
                }
        }
        printf("# %zu MiB, one thread, best of %u; tree = %u KiB pieces through blake3_subtree_cv + merge\n",
               mib, ROUNDS, PIECE >> 10);
        printf("algo=blake3-reference gbps=%.3f\n", (double)size / best_ref / 1e9);
        printf("algo=blake3-tree gbps=%.3f\n", (double)size / best_tree / 1e9);
        printf("tree/reference=%.3f\n", best_ref / best_tree);
        return 0;
}
