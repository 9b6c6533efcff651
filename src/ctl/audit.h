/* SPDX-License-Identifier: MIT */
/* audit.h: fhashctl audit: a directory against a manifest: ok, changed, missing, new, moved */
#pragma once

#include <stdbool.h>

#include "ctl/algo.h"
#include "fhash/fhash.h"

/* Hashes a source's inputs (in-process or through fhashd, as the command line says), fn getting each
 * result; returns 0 or -errno after saying why: -ECONNABORTED when the run stopped part-way. */
typedef int (*AuditRunFn)(fhash_source_fn next, void *source_userdata, fhash_result_fn fn, void *userdata,
                          void *ctx);

typedef struct AuditOptions {
        const char *algo;       /* -a: the algorithm of untagged lines; NULL: as check reads them */
        bool json;           /* one object per file, then a summary object */
        bool quiet;          /* no "NAME: ok" lines */
        bool status;         /* no lines at all: the exit code says it */
        bool update;         /* write the manifest anew from what was found (rename over); make it if it
                              * is missing or empty */
        bool create;         /* make a missing or empty manifest, as update does; leave one that exists */
        unsigned attributes; /* --attributes: record these (baseline.h, 1u << BaselineAttr) too */
        bool journal;        /* --journal: findings to the journal, structured (audit-journal.h) */
        AuditRunFn run;
        void *run_ctx;
} AuditOptions;

/*
 * Walks dir (its regular files, depth-first, sorted, as hash -r) and compares with the manifest,
 * whose names are relative to dir (a leading "./" is ignored; the manifest itself is left out if it
 * lies in dir). Each file found is "ok" or "changed" if the manifest lists it, else "new"; a new file
 * whose digest is that of a listed file not found is "moved" from it instead, and the listed files
 * left are "missing". Lines: files in walk order as they are hashed (ok, changed), then new and moved
 * ones in walk order, then missing ones in manifest order; a summary on stderr. A baseline
 * (baseline.h) also has the attributes it recorded compared: a file whose attributes differ is
 * "changed" too, with what changed. With update, a missing or empty manifest is made (the first run
 * of a scheduled audit): no lines, a summary. Returns the exit code: 0 when every file is ok (or the
 * baseline was made), 1 when anything is not (or could not be read), 2 for usage errors, 3 when
 * the run stopped part-way.
 */
int audit_run(const char *manifest, const char *dir, const AuditOptions *o);
