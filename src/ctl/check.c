/* SPDX-License-Identifier: MIT */
/* check.c: fhashctl check, every manifest of a run in one pass */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/macro.h"
#include "ctl/check.h"
#include "ctl/exit-status.h"
#include "ctl/manifest.h"
#include "ctl/output.h"
#include "ctl/run.h"

/*
 * check: every manifest of one run goes through one engine (or one stream of jobs to fhashd), so that
 * a thousand small manifests cost one set-up, not a thousand. A marker item before and after each
 * manifest's entries (skipped items, delivered in order like the rest) brings its messages and its
 * summary out where they belong. A manifest is read when the run reaches it and freed once its end
 * marker is delivered.
 */
static const char CHECK_BEGIN[] = "manifest begins", CHECK_END[] = "manifest ends";

typedef struct CheckManifest {
        const char *sumfile;
        char *q;               /* quoted, for messages */
        Manifest *m;
        int read_error;        /* -errno reading it */
        size_t n_items;        /* entries checked (not left out by --ignore-missing) */
} CheckManifest;

typedef struct CheckState {
        const Args *args;
        char **files;
        size_t n_files;
        CheckManifest *manifests;
        /* pulling */
        size_t pull_file, pull_entry;
        int pull_phase;        /* 0: begin marker next, 1: entries, 2: end marker */
        HashAlgo last_algo;    /* markers take it: they do not split a job */
        /* delivering: counts of the manifest being delivered */
        size_t ok, mismatched, unreadable;
        bool failed;
} CheckState;

static void check_json(const RunItem *item, const RunResult *r, const char *status, const char *error)
{
        fputs("{\"name\":", stdout);
        (void)output_write_json_string(stdout, item->name);
        printf(",\"algorithm\":\"%s\",\"expected\":\"%s\",\"digest\":", hash_algo_to_string(item->algo),
               item->expected);
        if (r->hex[0])
                printf("\"%s\",\"size\":%" PRIu64, r->hex, r->size);
        else
                fputs("null,\"size\":null", stdout);
        printf(",\"status\":\"%s\",\"error\":", status);
        if (error)
                (void)output_write_json_string(stdout, error);
        else
                fputs("null", stdout);
        fputs("}\n", stdout);
}

static const char *plural(size_t n, const char *one, const char *many)
{
        return n == 1 ? one : many;
}

/* Every line failed and was read as the algorithm its length suggests: a manifest of another tool
 * of the same digest length (b3sum, b2sum, xxhsum -H2/-H3, ...) fails exactly so. Says once which
 * -a to try; the lines are never tried as those algorithms behind the user's back. */
static void hint_other_algorithms(const Manifest *m, const char *q)
{
        char list[256] = "";
        size_t l = 0;
        HashAlgo used;

        if (m->n_entries == 0)
                return;
        used = m->entries[0].algo;
        for (size_t i = 0; i < m->n_entries; i++)
                if (m->entries[i].tagged || m->entries[i].algo != used)
                        return;
        for (HashAlgo x = 0; x < _HASH_ALGO_MAX; x++)
                if (x != used && hash_algo_digest_size(x) == hash_algo_digest_size(used)) {
                        int k = snprintf(list + l, sizeof(list) - l, "%s-a %s", l > 0 ? " or " : "",
                                         hash_algo_to_string(x));
                        if (k < 0 || (size_t)k >= sizeof(list) - l)
                                break;
                        l += (size_t)k;
                }
        if (l > 0)
                ctl_err("%s: no line matched as %s; if another tool wrote it, try %s", q, hash_algo_to_string(used),
                    list);
}

/* Reads the next manifest when the run reaches it; its errors are told when its begin marker is
 * delivered. Returns 0 or -ENOMEM. */
static int check_load(CheckState *s, CheckManifest *cm)
{
        const Args *a = s->args;
        _cleanup_free_ char *buf = NULL;
        size_t size = 0;
        int r;

        if (output_quote(streq(cm->sumfile, "-") ? "standard input" : cm->sumfile, &cm->q) < 0)
                return -ENOMEM;
        r = manifest_read(cm->sumfile, &buf, &size);
        if (r < 0) {
                cm->read_error = r;
                return 0;
        }
        return manifest_parse_with(buf, size,
                                   &(ManifestParseOptions){ .algo = a->algo_set ? a->algo : _HASH_ALGO_INVALID,
                                                            .hint = manifest_algo_from_filename(cm->sumfile),
                                                            .length = a->params.out_len,
                                                            .zero = a->zero },
                                   &cm->m);
}

static int check_next(void *userdata, RunItem *ret)
{
        CheckState *s = userdata;
        const Args *a = s->args;

        while (s->pull_file < s->n_files) {
                CheckManifest *cm = &s->manifests[s->pull_file];
                int r;

                switch (s->pull_phase) {
                case 0:
                        cm->sumfile = s->files[s->pull_file];
                        r = check_load(s, cm);
                        if (r < 0)
                                return r;
                        s->pull_phase = 1;
                        s->pull_entry = 0;
                        *ret = (RunItem){ .name = cm->sumfile, .path = cm->sumfile, .algo = s->last_algo,
                                          .note = CHECK_BEGIN };
                        return 1;
                case 1:
                        while (cm->m && s->pull_entry < cm->m->n_entries) {
                                const ManifestEntry *e = &cm->m->entries[s->pull_entry++];

                                /* As coreutils: a missing file is not even looked at with
                                 * --ignore-missing. */
                                if (a->ignore_missing && !e->from_stdin && access(e->name, F_OK) < 0 &&
                                    errno == ENOENT)
                                        continue;
                                cm->n_items++;
                                s->last_algo = e->algo;
                                *ret = (RunItem){ .name = e->name, .path = e->from_stdin ? "-" : e->name, .algo = e->algo,
                                                  .out_len = e->out_len, .expected = e->hex };
                                return 1;
                        }
                        s->pull_phase = 2;
                        break;
                default:
                        *ret = (RunItem){ .name = cm->sumfile, .path = cm->sumfile, .algo = s->last_algo,
                                          .note = CHECK_END };
                        s->pull_phase = 0;
                        s->pull_file++;
                        return 1;
                }
        }
        return 0;
}

static void check_json_summary(const CheckManifest *cm, size_t ok, size_t mismatched, size_t unreadable,
                               const char *error)
{
        fputs("{\"summary\":true,\"manifest\":", stdout);
        (void)output_write_json_string(stdout, cm->sumfile);
        printf(",\"ok\":%zu,\"mismatched\":%zu,\"unreadable\":%zu,\"improperly_formatted\":%zu", ok, mismatched,
               unreadable, cm->m ? cm->m->n_bad : 0);
        if (error) {
                fputs(",\"error\":", stdout);
                (void)output_write_json_string(stdout, error);
        }
        fputs("}\n", stdout);
}

/* A manifest's messages before its first verdict, and its summary after its last. Markers come in
 * order, begin and end alternately, so the manifest is the oldest one not ended. */
static void check_marker(CheckState *s, bool begin)
{
        const Args *a = s->args;
        size_t k = 0;
        CheckManifest *cm;
        const Manifest *m;

        while (k < s->n_files && !s->manifests[k].q)
                k++;
        if (k == s->n_files)
                return;
        cm = &s->manifests[k];
        m = cm->m;
        if (begin) {
                s->ok = s->mismatched = s->unreadable = 0;
                if (cm->read_error < 0) {
                        ctl_err("%s: %s", cm->q, strerror(-cm->read_error));
                        if (a->json)
                                check_json_summary(cm, 0, 0, 0, strerror(-cm->read_error));
                        s->failed = true;
                        return;
                }
                if (a->warn)
                        for (size_t i = 0; i < m->n_bad; i++)
                                ctl_err("%s: %u: improperly formatted %s%schecksum line", cm->q, m->bad_lines[i],
                                    a->algo_set ? hash_algo_tag(a->algo) : "", a->algo_set ? " " : "");
                if (m->n_entries == 0) {
                        ctl_err("%s: no properly formatted checksum lines found", cm->q);
                        /* Every manifest gets its summary object, an empty one too. */
                        if (a->json)
                                check_json_summary(cm, 0, 0, 0, "no properly formatted checksum lines found");
                        s->failed = true;
                }
                return;
        }

        if (cm->read_error >= 0 && m->n_entries > 0) {
                bool failed = false;

                if (a->json)
                        check_json_summary(cm, s->ok, s->mismatched, s->unreadable, NULL);
                else if (!a->status) {
                        if (m->n_bad > 0)
                                ctl_err("WARNING: %zu %s improperly formatted", m->n_bad,
                                    plural(m->n_bad, "line is", "lines are"));
                        if (s->unreadable > 0)
                                ctl_err("WARNING: %zu listed %s could not be read", s->unreadable,
                                    plural(s->unreadable, "file", "files"));
                        if (s->mismatched > 0)
                                ctl_err("WARNING: %zu computed %s did NOT match", s->mismatched,
                                    plural(s->mismatched, "checksum", "checksums"));
                }
                if (a->ignore_missing && cm->n_items == 0) {
                        if (!a->status)
                                ctl_err("%s: no file was verified", cm->q);
                        failed = true;
                }
                if (!a->status && !a->algo_set && s->ok == 0 && s->mismatched > 0)
                        hint_other_algorithms(m, cm->q);
                if (s->mismatched > 0 || s->unreadable > 0 || (a->strict && m->n_bad > 0))
                        failed = true;
                s->failed |= failed;
        }
        cm->m = manifest_free(cm->m);
        cm->q = mfree(cm->q);
        cm->sumfile = NULL;
}

static void check_result(const RunItem *item, const RunResult *r, void *userdata)
{
        CheckState *s = userdata;
        const Args *a = s->args;
        const char *verdict;

        if (item->note == CHECK_BEGIN || item->note == CHECK_END) {
                check_marker(s, item->note == CHECK_BEGIN);
                return;
        }
        switch (r->status) {
        case RUN_OK:
                s->ok++;
                if (a->json)
                        check_json(item, r, "ok", NULL);
                if (a->json || a->quiet || a->status)
                        return;
                verdict = "OK";
                break;
        case RUN_MISMATCH:
                s->mismatched++;
                if (a->json) {
                        check_json(item, r, "mismatch", NULL);
                        return;
                }
                if (a->status)
                        return;
                verdict = "FAILED";
                break;
        default:
                s->unreadable++;
                if (a->json) {
                        check_json(item, r, "unreadable", r->message ? r->message : "failed");
                        return;
                }
                /* coreutils names the unreadable file even with --status. */
                ctl_err_name(item->name, r->message ? r->message : "failed");
                if (a->status)
                        return;
                verdict = "FAILED open or read";
        }
        (void)output_write_check_name(stdout, item->name);
        printf(": %s\n", verdict);
}

int verb_check(Args *a)
{
        char *stdin_arg[] = { (char *)"-" };
        CheckState s = {
                .args = a,
                .files = a->n_rest > 0 ? a->rest : stdin_arg,
                .n_files = a->n_rest > 0 ? a->n_rest : 1,
                .last_algo = a->algo,
        };
        RunSource source = { .next = check_next, .userdata = &s };
        int r;

        if (a->tag || a->recursive)
                return ctl_usage_error("check: --tag and --recursive are options of hash");
        s.manifests = calloc(s.n_files, sizeof(*s.manifests));
        if (!s.manifests) {
                ctl_err("Out of memory.");
                return CTL_EXIT_FAILED;
        }
        r = ctl_run_items(a, &source, check_result, &s);
        for (size_t i = 0; i < s.n_files; i++) {
                manifest_free(s.manifests[i].m);
                free(s.manifests[i].q);
        }
        free(s.manifests);
        if (r == -ENOMEM)
                ctl_err("Out of memory.");
        if (fflush(stdout) != 0 || ferror(stdout)) {
                ctl_err("write error: %m");
                return CTL_EXIT_FAILED;
        }
        return r < 0 || s.failed ? CTL_EXIT_FAILED : CTL_EXIT_OK;
}
