/* SPDX-License-Identifier: MIT */
/* check.c: fhashctl check, every manifest of a run in one pass */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl/check.h"
#include "ctl/exit-status.h"
#include "ctl/macro.h"
#include "ctl/manifest-reader.h"
#include "ctl/output.h"
#include "ctl/run.h"

/*
 * check: every manifest of one run goes through one engine (or one stream of jobs to fhashd), so that
 * a thousand small manifests cost one set-up, not a thousand. A marker item before and after each
 * manifest's entries (skipped items, delivered in order like the rest) brings its messages and its
 * summary out where they belong; with --warn, one per improperly formatted line brings its warning
 * out in line order. A manifest is read a line at a time as the runner asks for items, so memory
 * follows the items in flight, not the manifest's size (an 84 MB manifest of 1M lines took 275 MB
 * when it was read whole).
 */
static const char CHECK_BEGIN[] = "manifest begins", CHECK_END[] = "manifest ends",
                  CHECK_BAD[] = "improperly formatted line", CHECK_MTREE[] = "mtree verdict";

/* What check says of an mtree entry without hashing it (a directory, a link, a file whose size
 * already differs or that has no digest fhash has): the reason of a skipped input, interned by the
 * run (a few fixed strings). */
static const char VERDICT_OK[] = "ok", VERDICT_TYPE[] = "its type differs from the manifest's",
                  VERDICT_SIZE[] = "its size differs from the manifest's",
                  VERDICT_MODE[] = "its permissions differ from the manifest's",
                  VERDICT_LINK[] = "its link target differs from the manifest's";

typedef struct CheckManifest {
        const char *sumfile;
        char *q;               /* quoted, for messages */
        ManifestReader *rd;    /* from its begin marker's pull until its last line is read */
        int read_error;        /* -errno opening or reading it */
        size_t n_entries;      /* properly formatted lines */
        size_t n_bad;          /* improperly formatted lines */
        const char *first_algo;   /* the first entry's algorithm, and whether every entry is */
        bool one_algo;         /* untagged and of it (for hint_other_algorithms()) */
        size_t n_items;        /* entries checked (not left out by --ignore-missing) */
        size_t n_undigested;   /* mtree files without a digest fhash checks: type, size, mode only */
        const char *unsupported; /* ... the keyword of one that named one fhash lacks */
} CheckManifest;

typedef struct CheckState {
        const Args *args;
        char **files;
        size_t n_files;
        CheckManifest *manifests;
        /* pulling */
        size_t pull_file;
        int pull_phase;        /* 0: begin marker next, 1: entries, 2: end marker */
        ManifestEntry entry;   /* the last pulled: its name lives until the next pull */
        char bad_line[16];     /* the last bad line's number: its marker's path (a note is never opened) */
        /* delivering: counts of the manifest being delivered */
        size_t ok, mismatched, unreadable;
        size_t missing;        /* of the unreadable: relative names not found (ENOENT) */
        size_t differ;         /* mtree entries whose type, size, permissions or link differ */
        bool failed;
} CheckState;

static void check_json(const fhash_result *r, const char *status, const char *error)
{
        fputs("{\"name\":", stdout);
        (void)output_write_json_string(stdout, r->name);
        printf(",\"algorithm\":\"%s\",\"expected\":\"%s\",\"digest\":", r->algorithm, r->expected ?: "");
        if (r->digest)
                printf("\"%s\",\"size\":%" PRIu64, r->digest, r->size);
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
static void hint_other_algorithms(const CheckManifest *cm)
{
        char list[256] = "";
        size_t l = 0;
        const char *used = cm->first_algo;

        if (cm->n_entries == 0 || !cm->one_algo)
                return;
        for (const char *const *all = fhash_algorithms(); *all; all++) {
                const char *x = *all;

                if (!algo_is(x, used) && algo_digest_size(x) == algo_digest_size(used)) {
                        int k = snprintf(list + l, sizeof(list) - l, "%s-a %s", l > 0 ? " or " : "",
                                         x);
                        if (k < 0 || (size_t)k >= sizeof(list) - l)
                                break;
                        l += (size_t)k;
                }
        }
        if (l > 0)
                ctl_err("%s: no line matched as %s; if another tool wrote it, try %s", cm->q, used,
                    list);
}

/* Opens the next manifest when the run reaches it; its errors are told when its end marker is
 * delivered. Returns 0 or -ENOMEM. */
static int check_load(CheckState *s, CheckManifest *cm)
{
        const Args *a = s->args;
        int r;

        if (output_quote(streq(cm->sumfile, "-") ? "standard input" : cm->sumfile, &cm->q) < 0)
                return -ENOMEM;
        r = manifest_reader_new(cm->sumfile,
                                &(ManifestParseOptions){ .algo = a->algo_set ? a->algo : NULL,
                                                         .hint = manifest_algo_from_filename(cm->sumfile),
                                                         .length = a->params.out_len,
                                                         .zero = a->zero },
                                &cm->rd);
        if (r == -ENOMEM)
                return r;
        cm->read_error = MIN(r, 0);
        return 0;
}

static bool mtree_type_is(MtreeType t, mode_t m)
{
        switch (t) {
        case MTREE_FILE:
                return S_ISREG(m);
        case MTREE_DIR:
                return S_ISDIR(m);
        case MTREE_LINK:
                return S_ISLNK(m);
        case MTREE_BLOCK:
                return S_ISBLK(m);
        case MTREE_CHAR:
                return S_ISCHR(m);
        case MTREE_FIFO:
                return S_ISFIFO(m);
        default:
                return S_ISSOCK(m);
        }
}

/* Whether the link at path points where target says (readlink(2), no allocation past PATH_MAX). */
static bool link_is(const char *path, const char *target)
{
        char buf[4096];
        ssize_t n = readlink(path, buf, sizeof(buf));

        return target && n >= 0 && (size_t)n < sizeof(buf) && (size_t)n == strlen(target) &&
               memcmp(buf, target, (size_t)n) == 0;
}

/* An mtree entry (s->entry): what lstat(2) and readlink(2) tell is checked here (type, size, mode,
 * link target: cheap, and a file whose size differs is not read); a file with a digest goes to be
 * hashed. 1 and *ret, or 0 to leave it out (a missing optional entry, or --ignore-missing). */
static int check_mtree_entry(CheckState *s, CheckManifest *cm, fhash_input *ret)
{
        const Args *a = s->args;
        const ManifestEntry *e = &s->entry;
        const MtreeInfo *m = &e->mtree;
        const char *verdict = VERDICT_OK;
        struct stat st;

        if (lstat(e->name, &st) < 0) {
                int error = -errno;

                if (error == -ENOENT && (m->optional || a->ignore_missing))
                        return 0;
                cm->n_items++;
                *ret = (fhash_input){ .path = e->name, .name = e->name, .fd = -1, .error = error };
                return 1;
        }
        cm->n_items++;
        if (m->nochange)
                verdict = VERDICT_OK;
        else if (!mtree_type_is(m->type, st.st_mode))
                verdict = VERDICT_TYPE;
        else if (m->type == MTREE_FILE && m->has_size && (uint64_t)st.st_size != m->size)
                verdict = VERDICT_SIZE;
        else if (m->has_mode && m->type != MTREE_LINK && (st.st_mode & 07777) != m->mode)
                verdict = VERDICT_MODE;
        else if (m->type == MTREE_LINK && m->link && !link_is(e->name, m->link))
                verdict = VERDICT_LINK;
        else if (m->type == MTREE_FILE && e->algo) {
                *ret = (fhash_input){ .path = e->name, .name = e->name, .fd = -1, .expected = e->hex,
                                      .algorithm = !algo_is(e->algo, a->algo) ? e->algo : NULL };
                return 1;
        } else if (m->type == MTREE_FILE) {
                cm->n_undigested++;
                if (m->unsupported)
                        cm->unsupported = m->unsupported;
        }
        *ret = (fhash_input){ .path = e->name, .name = e->name, .fd = -1, .skip = verdict,
                              .userdata = (void *)CHECK_MTREE };
        return 1;
}

/* The next line of cm that makes an item: 1 and *ret, 0 once the manifest is read (or failed), or
 * -ENOMEM. */
static int check_next_line(CheckState *s, CheckManifest *cm, fhash_input *ret)
{
        const Args *a = s->args;
        ManifestEntry *e = &s->entry;

        while (cm->rd) {
                int r;

                manifest_entry_clear(e);
                r = manifest_reader_next(cm->rd, e);
                if (r == -ENOMEM)
                        return r;
                if (r == MANIFEST_READ_BAD) {
                        cm->n_bad++;
                        if (!a->warn)
                                continue;
                        snprintf(s->bad_line, sizeof(s->bad_line), "%u", e->line);
                        *ret = (fhash_input){ .path = cm->sumfile, .name = s->bad_line, .fd = -1,
                                              .skip = CHECK_BAD, .userdata = (void *)CHECK_BAD };
                        return 1;
                }
                if (r != MANIFEST_READ_ENTRY) {
                        cm->read_error = MIN(r, 0);
                        cm->rd = manifest_reader_free(cm->rd);
                        break;
                }
                if (cm->n_entries++ == 0) {
                        cm->first_algo = e->algo;
                        cm->one_algo = !e->tagged;
                } else if (e->tagged || !algo_is(e->algo, cm->first_algo))
                        cm->one_algo = false;
                if (e->is_mtree) {
                        r = check_mtree_entry(s, cm, ret);
                        if (r == 0)
                                continue;
                        return r;
                }
                /* As coreutils: a missing file is not even looked at with --ignore-missing. */
                if (a->ignore_missing && !e->from_stdin && access(e->name, F_OK) < 0 && errno == ENOENT)
                        continue;
                cm->n_items++;
                /* xxhsum's "stdin" entry: what it hashed was standard input. */
                *ret = (fhash_input){ .path = e->from_stdin ? "-" : e->name, .name = e->name, .fd = -1,
                                      .expected = e->hex,
                                      .algorithm = !algo_is(e->algo, a->algo) ? e->algo : NULL,
                                      .length_bits = e->out_len * 8 };
                return 1;
        }
        return 0;
}

static int check_next(void *userdata, fhash_input *ret)
{
        CheckState *s = userdata;

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
                        *ret = (fhash_input){ .path = cm->sumfile, .fd = -1, .skip = CHECK_BEGIN,
                                              .userdata = (void *)CHECK_BEGIN };
                        return 1;
                case 1:
                        r = check_next_line(s, cm, ret);
                        if (r != 0)
                                return r;
                        s->pull_phase = 2;
                        break;
                default:
                        *ret = (fhash_input){ .path = cm->sumfile, .fd = -1, .skip = CHECK_END,
                                              .userdata = (void *)CHECK_END };
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
               unreadable, cm->n_bad);
        if (error) {
                fputs(",\"error\":", stdout);
                (void)output_write_json_string(stdout, error);
        }
        fputs("}\n", stdout);
}

/* The manifest whose items are being delivered: markers come in order, begin and end alternately,
 * so it is the oldest one not ended. */
static CheckManifest *check_delivering(CheckState *s)
{
        for (size_t k = 0; k < s->n_files; k++)
                if (s->manifests[k].q)
                        return &s->manifests[k];
        return NULL;
}

/* A manifest's summary after its last verdict, or why it could not be checked. Everything about it
 * is known then: its end marker is pulled after its last line was read. */
static void check_end(CheckState *s, CheckManifest *cm)
{
        const Args *a = s->args;
        bool failed = false;

        if (cm->read_error < 0) {
                /* As coreutils, the verdicts of the lines read before it stand, without a summary. */
                ctl_err("%s: %s", cm->q, strerror(-cm->read_error));
                if (a->json)
                        check_json_summary(cm, s->ok, s->mismatched + s->differ, s->unreadable, strerror(-cm->read_error));
                s->failed = true;
                return;
        }
        if (cm->n_entries == 0) {
                ctl_err("%s: no properly formatted checksum lines found", cm->q);
                /* Every manifest gets its summary object, an empty one too. */
                if (a->json)
                        check_json_summary(cm, 0, 0, 0, "no properly formatted checksum lines found");
                s->failed = true;
                return;
        }
        if (a->json)
                check_json_summary(cm, s->ok, s->mismatched + s->differ, s->unreadable, NULL);
        else if (!a->status) {
                if (cm->n_bad > 0)
                        ctl_err("WARNING: %zu %s improperly formatted", cm->n_bad, plural(cm->n_bad, "line is", "lines are"));
                if (s->unreadable > 0)
                        ctl_err("WARNING: %zu listed %s could not be read", s->unreadable,
                            plural(s->unreadable, "file", "files"));
                if (s->mismatched > 0)
                        ctl_err("WARNING: %zu computed %s did NOT match", s->mismatched,
                            plural(s->mismatched, "checksum", "checksums"));
                if (s->differ > 0)
                        ctl_err("WARNING: %zu listed %s from the manifest in type, size, permissions or link target",
                                s->differ, plural(s->differ, "entry differs", "entries differ"));
                if (cm->n_undigested > 0)
                        ctl_err("WARNING: %zu listed %s no digest fhash can check%s%s%s: only %s type, size and "
                                "permissions were", cm->n_undigested, plural(cm->n_undigested, "file has", "files have"),
                                cm->unsupported ? " (" : "", cm->unsupported ? cm->unsupported : "",
                                cm->unsupported ? " is not supported)" : "", plural(cm->n_undigested, "its", "their"));
        }
        if (a->ignore_missing && cm->n_items == 0) {
                if (!a->status)
                        ctl_err("%s: no file was verified", cm->q);
                failed = true;
        }
        /* Run from another directory than the manifest's, most names are not found: that is what to
         * say, and no other algorithm would make those match. */
        if (!a->status && s->ok == 0 && s->missing > 0 && s->missing * 2 >= cm->n_items)
                ctl_err("%s: %zu of %zu listed files are not here; its names are relative to the directory it was "
                        "written in: run check there", cm->q, s->missing, cm->n_items);
        else if (!a->status && !a->algo_set && s->ok == 0 && s->mismatched > 0 && s->missing == 0)
                hint_other_algorithms(cm);
        if (s->mismatched > 0 || s->differ > 0 || s->unreadable > 0 || (a->strict && cm->n_bad > 0))
                failed = true;
        s->failed |= failed;
}

/* The line number of a CHECK_BAD marker is its result's name. */
static void check_marker(CheckState *s, const fhash_result *r)
{
        const Args *a = s->args;
        CheckManifest *cm = check_delivering(s);

        if (!cm)
                return;
        if (r->userdata == CHECK_BEGIN)
                s->ok = s->mismatched = s->unreadable = s->missing = s->differ = 0;
        else if (r->userdata == CHECK_BAD) {
                char tag[32];

                ctl_err("%s: %s: improperly formatted %s%schecksum line", cm->q, r->name,
                    a->algo_set ? fhash_algorithm_tag(a->algo, 0, tag, sizeof(tag)) : "", a->algo_set ? " " : "");
        } else {
                check_end(s, cm);
                cm->rd = manifest_reader_free(cm->rd);
                cm->q = mfree(cm->q);
                cm->sumfile = NULL;
        }
}

/* The verdict on an mtree entry that check_mtree_entry() gave without hashing it. */
static void check_mtree_result(CheckState *s, const fhash_result *r)
{
        const Args *a = s->args;
        bool ok = streq(r->skip, VERDICT_OK);

        if (ok)
                s->ok++;
        else
                s->differ++;
        if (a->json) {
                check_json(r, ok ? "ok" : "mismatch", ok ? NULL : r->skip);
                return;
        }
        if (a->status || (ok && a->quiet))
                return;
        if (!ok)
                ctl_err_name(r->name, r->skip);
        (void)output_write_check_name(stdout, r->name);
        printf(": %s\n", ok ? "OK" : "FAILED");
}

static void check_result(const fhash_result *r, void *userdata)
{
        CheckState *s = userdata;
        const Args *a = s->args;
        const char *verdict;

        if (r->userdata == CHECK_BEGIN || r->userdata == CHECK_END || r->userdata == CHECK_BAD) {
                check_marker(s, r);
                return;
        }
        if (r->userdata == CHECK_MTREE && r->status == FHASH_SKIPPED) {
                check_mtree_result(s, r);
                return;
        }
        switch (r->status) {
        case FHASH_OK:
                s->ok++;
                if (a->json)
                        check_json(r, "ok", NULL);
                if (a->json || a->quiet || a->status)
                        return;
                verdict = "OK";
                break;
        case FHASH_MISMATCH:
                s->mismatched++;
                if (a->json) {
                        check_json(r, "mismatch", NULL);
                        return;
                }
                if (a->status)
                        return;
                verdict = "FAILED";
                break;
        default:
                s->unreadable++;
                if (r->status == FHASH_ERROR && r->error == -ENOENT && r->name[0] != '/')
                        s->missing++;
                if (a->json) {
                        check_json(r, "unreadable", r->message ? r->message : "failed");
                        return;
                }
                /* coreutils names the unreadable file even with --status. */
                ctl_err_name(r->name, r->message ? r->message : "failed");
                if (a->status)
                        return;
                verdict = "FAILED open or read";
        }
        (void)output_write_check_name(stdout, r->name);
        printf(": %s\n", verdict);
}

int verb_check(Args *a)
{
        char *stdin_arg[] = { (char *)"-" };
        CheckState s = {
                .args = a,
                .files = a->n_rest > 0 ? a->rest : stdin_arg,
                .n_files = a->n_rest > 0 ? a->n_rest : 1,
        };
        int r;

        if (a->tag || a->recursive)
                return ctl_usage_error("check: --tag and --recursive are options of hash");
        if (a->n_rest == 0 && isatty(STDIN_FILENO))
                ctl_err("reading checksum lines from standard input (Ctrl-D ends them)");
        s.manifests = calloc(s.n_files, sizeof(*s.manifests));
        if (!s.manifests) {
                ctl_err("Out of memory.");
                return CTL_EXIT_FAILED;
        }
        r = ctl_run(a, check_next, &s, check_result, &s);
        for (size_t i = 0; i < s.n_files; i++) {
                manifest_reader_free(s.manifests[i].rd);
                free(s.manifests[i].q);
        }
        manifest_entry_clear(&s.entry);
        free(s.manifests);
        if (r == -ENOMEM)
                ctl_err("Out of memory.");
        if (fflush(stdout) != 0 || ferror(stdout)) {
                ctl_err("write error: %m");
                return CTL_EXIT_FAILED;
        }
        return ctl_run_exit(r, s.failed);
}
