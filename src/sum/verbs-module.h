/* SPDX-License-Identifier: MIT */
/* verbs-module.h: fhashctl's own verbs, in a module loaded only when they are asked for */
#pragma once

/*
 * fhashctl's binary holds only what its tool personalities need (hashing with nettle, libb2,
 * libxxhash and BLAKE3), so that `sha256sum FILE` through it starts as fast as coreutils' own:
 * libcrypto, libsystemd and liburing alone cost ~1.3 ms to load, more than sha256sum's whole run
 * of one small file. Its verbs (hash, check, audit, jobs, ...) live in fhashctl-verbs.so, which
 * links libfhash and libsystemd and is dlopen()ed here: next to the binary in a build tree, else
 * from FHASH_PKGLIBDIR.
 */

/* Runs ctl_main() from the module and returns its exit status; says why and returns 1 when the
 * module cannot be loaded. */
int verbs_module_run(int argc, char *argv[]);

/* The name of the module's entry point (src/ctl/verbs-entry.c). */
#define VERBS_MODULE_ENTRY "fhashctl_verbs_main"
