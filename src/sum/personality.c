/* SPDX-License-Identifier: MIT */
/* personality.c: which tool fhashctl is, by its name or --as */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sum/b3.h"
#include "sum/coreutils.h"
#include "sum/personality.h"
#include "sum/xxh.h"

/* A --as of no tool is fhashctl's usage error, which exits 2 as its verbs' do (CTL_EXIT_USAGE in
 * ctl/exit-status.h, a layer this one does not include): test-personality.sh holds both to 2. */
#define PERSONA_EXIT_USAGE 2

static const Persona personas[] = {
        { "md5sum", cu_main, CU_MD5SUM },       { "sha1sum", cu_main, CU_SHA1SUM },
        { "sha224sum", cu_main, CU_SHA224SUM }, { "sha256sum", cu_main, CU_SHA256SUM },
        { "sha384sum", cu_main, CU_SHA384SUM }, { "sha512sum", cu_main, CU_SHA512SUM },
        { "b2sum", cu_main, CU_B2SUM },         { "cksum", cu_main, CU_CKSUM },
        { "sum", cu_main, CU_SUM },             { "b3sum", b3_main, 0 },
        { "xxhsum", xxh_main, XXH_SUM },        { "xxh32sum", xxh_main, XXH_32SUM },
        { "xxh64sum", xxh_main, XXH_64SUM },    { "xxh128sum", xxh_main, XXH_128SUM },
        { "xxh3sum", xxh_main, XXH_3SUM },
};

const Persona *persona_find(const char *name)
{
        for (size_t i = 0; name && i < ELEMENTSOF(personas); i++)
                if (streq(personas[i].name, name))
                        return &personas[i];
        return NULL;
}

static const char *base_name(const char *path)
{
        const char *s = strrchr(path, '/');
        return s ? s + 1 : path;
}

int persona_dispatch(int argc, char *argv[])
{
        const Persona *p;
        const char *as = NULL;
        int shift = 0;

        if (argc < 1 || !argv[0])
                return -ENOENT;
        p = persona_find(base_name(argv[0]));
        if (p)
                return p->main(p, argc, argv);

        /* Only as the first argument: anywhere else "--as" belongs to the verb or is a file. */
        if (argc >= 2 && streq(argv[1], "--as")) {
                if (argc < 3) {
                        fprintf(stderr, "fhashctl: option '--as' requires an argument\n"
                                        "Try 'fhashctl --help' for more information.\n");
                        return PERSONA_EXIT_USAGE;
                }
                as = argv[2];
                shift = 2;
        } else if (argc >= 2 && strncmp(argv[1], "--as=", 5) == 0) {
                as = argv[1] + 5;
                shift = 1;
        }
        if (!as)
                return -ENOENT;
        p = persona_find(as);
        if (!p) {
                fprintf(stderr, "fhashctl: --as: '%s' is not a tool fhashctl can be (", as);
                for (size_t i = 0; i < ELEMENTSOF(personas); i++)
                        fprintf(stderr, "%s%s", i > 0 ? ", " : "", personas[i].name);
                fprintf(stderr, ")\nTry 'fhashctl --help' for more information.\n");
                return PERSONA_EXIT_USAGE;
        }
        /* The tool sees itself as argv[0], as through a link of its name. */
        argv[shift] = (char *)p->name;
        return p->main(p, argc - shift, argv + shift);
}
