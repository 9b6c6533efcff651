/* SPDX-License-Identifier: MIT */
/* audit.c: fhashctl audit: a directory against a manifest: ok, changed, missing, new, moved */
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl/audit-journal.h"
#include "ctl/audit.h"
#include "ctl/baseline.h"
#include "ctl/exit-status.h"
#include "ctl/macro.h"
#include "ctl/manifest-reader.h"
#include "ctl/output.h"
#include "ctl/walk.h"

typedef struct Listed {
        const char *name;  /* the manifest's, without a leading "./" */
        const char *hex;
        const BaselineAttrs *attrs;  /* its "#@" line's, or NULL */
        bool seen;         /* found in dir */
        bool moved;        /* a new file with its digest took its place */
} Listed;

/* A file found in dir: kept for --update, and for the decision on new files after the walk. */
typedef struct Found {
        char *name;
        char hex[ALGO_HEX_MAX];
        BaselineAttrs attrs;  /* as found (mask 0: not collected) */
        bool listed;
} Found;

typedef struct Audit {
        const AuditOptions *o;
        const char *algo;
        Listed *listed;
        Listed **by_name;  /* sorted by name */
        size_t n_listed;
        Found *found;      /* walk order */
        size_t n_found, alloc_found;
        AuditCounts c;
        BaselineInfo info;  /* the manifest's header and "#@" lines */
        unsigned collect;   /* attributes to take of each file: the baseline's and --attributes' */
        bool create;        /* no baseline yet (missing or empty) and --update: this run makes it */
        const char *manifest, *dir;
        Walk *walk;
        size_t prefix;     /* bytes of "DIR/" before each walked path's name */
        char *manifest_rel;  /* the manifest's own name within dir, or NULL */
} Audit;

_printf_(1, 2) static void warn(const char *fmt, ...)
{
        va_list ap;

        fflush(stdout);
        fputs("fhashctl: ", stderr);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
}

static const char *strip_dot(const char *name)
{
        while (name[0] == '.' && name[1] == '/')
                for (name += 2; *name == '/'; name++)
                        ;
        return name;
}

static int cmp_listed_name(const void *a, const void *b)
{
        return strcmp((*(Listed *const *)a)->name, (*(Listed *const *)b)->name);
}

static int cmp_listed_hex(const void *a, const void *b)
{
        return strcmp((*(Listed *const *)a)->hex, (*(Listed *const *)b)->hex);
}

static Listed *find_name(const Audit *au, const char *name)
{
        Listed key = { .name = name }, *k = &key, **p;

        p = bsearch(&k, au->by_name, au->n_listed, sizeof(void *), cmp_listed_name);
        return p ? *p : NULL;
}

static void print_line(const Audit *au, const char *name, const char *status, const char *hex, const char *expected,
                       const char *from, const char *error, const char *changes)
{
        const AuditOptions *o = au->o;

        /* Making the baseline: every file is new, which is not news. */
        if (au->create)
                return;
        if (o->journal && !streq(status, "ok"))
                audit_journal_file(au->dir, au->manifest, name, status, hex, expected, from, changes);

        if (o->json) {
                fputs("{\"name\":", stdout);
                (void)output_write_json_string(stdout, name);
                printf(",\"status\":\"%s\",\"algorithm\":\"%s\"", status, au->algo);
                printf(",\"digest\":%s%s%s", hex ? "\"" : "", hex ?: "null", hex ? "\"" : "");
                printf(",\"expected\":%s%s%s", expected ? "\"" : "", expected ?: "null", expected ? "\"" : "");
                if (from) {
                        fputs(",\"from\":", stdout);
                        (void)output_write_json_string(stdout, from);
                }
                if (error) {
                        fputs(",\"error\":", stdout);
                        (void)output_write_json_string(stdout, error);
                }
                if (changes) {
                        /* "content,mode" as ["content","mode"]: names of ours, nothing to escape. */
                        fputs(",\"changes\":[\"", stdout);
                        for (const char *c = changes; *c; c++)
                                if (*c == ',')
                                        fputs("\",\"", stdout);
                                else
                                        putchar(*c);
                        fputs("\"]", stdout);
                }
                fputs("}\n", stdout);
                return;
        }
        if (o->status || (o->quiet && streq(status, "ok")))
                return;
        /* One '\' at the start of the line says both names are escaped, as in a check line. */
        bool escape = output_name_needs_escape(name) || (from && output_name_needs_escape(from));
        if (escape)
                putchar('\\');
        (void)output_write_name(stdout, name, escape);
        printf(": %s", status);
        if (from) {
                fputs(" from ", stdout);
                (void)output_write_name(stdout, from, escape);
        }
        /* Content alone says "changed", as before attributes were recorded. */
        if (changes && !streq(changes, "content")) {
                fputs(" (", stdout);
                for (const char *c = changes; *c; c++)
                        fputs(*c == ',' ? ", " : (char[]){ *c, 0 }, stdout);
                putchar(')');
        }
        putchar('\n');
}

static int audit_next(void *userdata, fhash_input *ret)
{
        Audit *au = userdata;
        WalkEntry e;
        int r;

        for (;;) {
                const char *name;

                r = walk_next(au->walk, &e);
                if (r < 0)
                        warn("cannot list files: %s", strerror(-r));
                if (r <= 0)
                        return r;
                name = strlen(e.path) > au->prefix ? e.path + au->prefix : e.path;
                if (au->manifest_rel && streq(name, au->manifest_rel))
                        continue; /* the manifest is not part of what it lists */
                /* The attributes are taken as the file is handed over, and come back with its result. */
                BaselineAttrs *a = NULL;
                if (au->collect && !e.error && !e.note) {
                        a = malloc(sizeof(*a));
                        if (!a)
                                return -ENOMEM;
                        if (baseline_attrs_get(e.path, au->collect, a) < 0)
                                a->mask = 0; /* gone or unreadable: its result says so */
                }
                *ret = (fhash_input){ .path = e.path, .fd = -1, .name = name, .error = e.error, .skip = e.note,
                                      .algorithm = au->algo, .userdata = a };
                return 1;
        }
}

static void audit_result(const fhash_result *r, void *userdata)
{
        _cleanup_free_ BaselineAttrs *attrs = r->userdata;
        Audit *au = userdata;
        Listed *l;
        Found *f;

        if (r->status == FHASH_SKIPPED) {
                _cleanup_free_ char *q = NULL;

                if (!au->o->status && output_quote(r->name, &q) >= 0)
                        warn("%s: skipped: %s", q, r->skip);
                return;
        }
        l = find_name(au, r->name);
        if (r->status != FHASH_OK) {
                const char *why = r->message ? r->message : "failed";
                _cleanup_free_ char *q = NULL;

                au->c.unreadable++;
                if (l)
                        l->seen = true; /* there, but unreadable: not missing */
                if (output_quote(r->name, &q) >= 0)
                        warn("%s: %s", q, why);
                if (au->o->journal)
                        audit_journal_file(au->dir, au->manifest, r->name, "unreadable", NULL, l ? l->hex : NULL,
                                           NULL, NULL);
                if (au->o->json && !au->create)
                        print_line(au, r->name, "unreadable", NULL, l ? l->hex : NULL, NULL, why, NULL);
                return;
        }
        if (au->n_found == au->alloc_found) {
                size_t n = MAX(au->alloc_found * 2, (size_t)64);
                Found *p = reallocarray(au->found, n, sizeof(*p));

                if (!p) {
                        warn("Out of memory.");
                        exit(CTL_EXIT_FAILED);
                }
                au->found = p;
                au->alloc_found = n;
        }
        f = &au->found[au->n_found];
        *f = (Found){ .name = strdup(r->name), .listed = l != NULL };
        if (attrs)
                f->attrs = *attrs;
        if (!f->name) {
                warn("Out of memory.");
                exit(CTL_EXIT_FAILED);
        }
        au->n_found++;
        (void)snprintf(f->hex, sizeof(f->hex), "%s", r->digest);
        if (!l)
                return; /* new or moved: known once the walk is over */
        l->seen = true;
        unsigned diff = l->attrs && f->attrs.mask ? baseline_attrs_diff(l->attrs, &f->attrs) : 0;
        bool content = !streq(l->hex, f->hex);
        if (!content && diff == 0) {
                au->c.ok++;
                print_line(au, r->name, "ok", f->hex, l->hex, NULL, NULL, NULL);
                return;
        }
        char changes[128], attrs_list[112];
        (void)snprintf(changes, sizeof(changes), "%s%s%s", content ? "content" : "", content && diff ? "," : "",
                       baseline_attrs_format_mask(diff, attrs_list, sizeof(attrs_list)));
        au->c.changed++;
        print_line(au, r->name, "changed", f->hex, l->hex, NULL, NULL, changes);
}

/* After the walk: new files whose digest a missing one had are moved from it. */
static int audit_finish(Audit *au)
{
        _cleanup_free_ Listed **gone = NULL;
        size_t n_gone = 0;

        gone = calloc(au->n_listed + 1, sizeof(void *));
        if (!gone)
                return -ENOMEM;
        for (size_t i = 0; i < au->n_listed; i++)
                if (!au->listed[i].seen)
                        gone[n_gone++] = &au->listed[i];
        qsort(gone, n_gone, sizeof(void *), cmp_listed_hex);

        for (size_t i = 0; i < au->n_found; i++) {
                Found *f = &au->found[i];
                Listed key = { .hex = f->hex }, *k = &key, **p;

                if (f->listed)
                        continue;
                p = bsearch(&k, gone, n_gone, sizeof(void *), cmp_listed_hex);
                /* Several missing files with this digest: the first of them not taken yet. */
                while (p && p > gone && streq((*(p - 1))->hex, f->hex))
                        p--;
                while (p && p < gone + n_gone && streq((*p)->hex, f->hex) && (*p)->moved)
                        p++;
                if (p && p < gone + n_gone && streq((*p)->hex, f->hex)) {
                        (*p)->moved = true;
                        au->c.moved++;
                        print_line(au, f->name, "moved", f->hex, (*p)->hex, (*p)->name, NULL, NULL);
                } else {
                        au->c.added++;
                        print_line(au, f->name, "new", f->hex, NULL, NULL, NULL, NULL);
                }
        }
        for (size_t i = 0; i < au->n_listed; i++) {
                Listed *l = &au->listed[i];

                if (l->seen || l->moved)
                        continue;
                au->c.missing++;
                print_line(au, l->name, "missing", NULL, l->hex, NULL, NULL, NULL);
        }
        return 0;
}

/* The manifest anew from what was found, in walk order (baseline_write(): atomic). A baseline stays one
 * and gains the attributes --attributes asks for; a plain manifest stays plain unless they are asked. */
static int audit_update(const Audit *au, const char *manifest, bool dot, bool tagged)
{
        unsigned version = au->info.version > 0 || au->create || au->o->attributes ? BASELINE_VERSION : 0;
        BaselineEntry *e = calloc(au->n_found + 1, sizeof(*e));
        int r;

        if (!e)
                return -ENOMEM;
        for (size_t i = 0; i < au->n_found; i++)
                e[i] = (BaselineEntry){ .name = au->found[i].name, .hex = au->found[i].hex, .attrs = &au->found[i].attrs };
        r = baseline_write(manifest, version, au->algo, version ? au->collect : 0, tagged, dot, e, au->n_found);
        free(e); /* by hand: clang-tidy 14's analyzer does not see through _cleanup_ here */
        return r;
}

/* The manifest's name relative to dir if it lies in dir, so that the walk leaves it out. */
static char *manifest_within(const char *manifest, const char *dir)
{
        _cleanup_free_ char *m = realpath(manifest, NULL), *d = realpath(dir, NULL);
        size_t n;

        if (!m || !d)
                return NULL;
        n = strlen(d);
        if (n == 1)
                n = 0; /* "/" */
        if (strncmp(m, d, n) != 0 || m[n] != '/')
                return NULL;
        return strdup(m + n + 1);
}

/* The manifest read and checked into au; for --update, a missing or empty one is a baseline to make
 * (au->create). Returns 0, or the exit code after saying why. */
static int audit_load(Audit *au, const char *manifest, const char *q, Manifest **ret_m, char **ret_buf)
{
        const AuditOptions *o = au->o;
        _cleanup_(manifest_freep) Manifest *m = NULL;
        _cleanup_free_ char *buf = NULL;
        const char *why = NULL;
        unsigned line = 0;
        size_t size = 0;
        int r;

        r = manifest_read(manifest, &buf, &size);
        if (r == -ENOENT && (o->update || o->create))
                size = 0; /* no baseline yet: this run makes it */
        else if (r < 0) {
                warn("%s: %s", q, strerror(-r));
                return CTL_EXIT_FAILED;
        }
        r = manifest_parse_with(buf ?: "", size,
                                &(ManifestParseOptions){ .algo = o->algo, .hint = manifest_algo_from_filename(manifest) },
                                &m);
        if (r >= 0)
                r = baseline_scan(buf ?: "", size, &au->info, &line, &why);
        if (r == -EINVAL) {
                warn("%s:%u: %s", q, line, why);
                return CTL_EXIT_FAILED;
        }
        if (r < 0) {
                warn("Out of memory.");
                return CTL_EXIT_FAILED;
        }
        if (m->n_entries == 0 && m->n_bad == 0 && (o->update || o->create) &&
            (au->info.version == 0 || au->info.has_end)) {
                au->create = true;
                au->algo = o->algo ?: algo_from_string("sha256");
        } else if (m->n_entries == 0) {
                warn("%s: no properly formatted checksum lines found%s", q,
                     o->update || o->create ? "" : " (--update or --create makes a baseline of an empty or missing one)");
                return CTL_EXIT_FAILED;
        }
        /* A baseline is whole only with its trailer: one cut short by a copy or an editor is refused,
         * not read as if files had gone missing. */
        if (au->info.version > 0 && (!au->info.has_end || au->info.end_count != m->n_entries)) {
                warn("%s: a baseline that is not whole (%zu checksum lines, its \"# end\" line says %s%zu)", q,
                     m->n_entries, au->info.has_end ? "" : "nothing: ", au->info.end_count);
                return CTL_EXIT_FAILED;
        }
        if (m->n_bad > 0)
                warn("%s: %zu improperly formatted %s left out", q, m->n_bad, m->n_bad == 1 ? "line" : "lines");
        if (!au->create)
                au->algo = m->entries[0].algo;
        for (size_t i = 1; i < m->n_entries; i++)
                if (!algo_is(m->entries[i].algo, au->algo)) {
                        warn("%s: line %u is %s, line %u %s: an audit compares digests of one algorithm", q,
                             m->entries[0].line, au->algo, m->entries[i].line,
                             m->entries[i].algo);
                        return CTL_EXIT_FAILED;
                }
        au->collect = au->info.mask | o->attributes;
        *ret_m = TAKE_PTR(m);
        *ret_buf = TAKE_PTR(buf);
        return 0;
}

int audit_run(const char *manifest, const char *dir, const AuditOptions *o)
{
        _cleanup_(manifest_freep) Manifest *m = NULL;
        _cleanup_(walk_freep) Walk *w = NULL;
        _cleanup_free_ char *buf = NULL, *q = NULL;
        char *args[] = { (char *)dir };
        const WalkOptions wo = { .recursive = true };
        Audit au = { .o = o, .algo = NULL, .manifest = manifest, .dir = dir };
        struct stat st;
        bool dot = false, tagged = false;
        int r, ret = CTL_EXIT_FAILED;

        if (output_quote(manifest, &q) < 0) {
                warn("Out of memory.");
                return CTL_EXIT_FAILED;
        }
        if (stat(dir, &st) < 0) {
                warn("audit: %s: %m", dir);
                return CTL_EXIT_FAILED;
        }
        if (!S_ISDIR(st.st_mode)) {
                warn("audit: %s: %s", dir, strerror(ENOTDIR));
                return CTL_EXIT_FAILED;
        }
        r = audit_load(&au, manifest, q, &m, &buf);
        if (r > 0) {
                baseline_info_done(&au.info);
                return r;
        }
        if (m->n_entries > 0) {
                dot = strncmp(m->entries[0].name, "./", 2) == 0;
                tagged = m->entries[0].tagged;
        }

        au.n_listed = m->n_entries;
        au.listed = calloc(au.n_listed + 1, sizeof(*au.listed));
        au.by_name = calloc(au.n_listed + 1, sizeof(void *));
        if (!au.listed || !au.by_name) {
                warn("Out of memory.");
                goto finish;
        }
        for (size_t i = 0; i < au.n_listed; i++) {
                au.listed[i] = (Listed){ .name = strip_dot(m->entries[i].name), .hex = m->entries[i].hex,
                                         .attrs = baseline_info_attrs(&au.info, m->entries[i].line) };
                au.by_name[i] = &au.listed[i];
        }
        qsort(au.by_name, au.n_listed, sizeof(void *), cmp_listed_name);
        for (size_t i = 1; i < au.n_listed; i++)
                if (streq(au.by_name[i - 1]->name, au.by_name[i]->name)) {
                        _cleanup_free_ char *qn = NULL;

                        (void)output_quote(au.by_name[i]->name, &qn);
                        warn("%s: %s is listed twice", q, qn ?: au.by_name[i]->name);
                        goto finish;
                }

        au.manifest_rel = manifest_within(manifest, dir);
        au.prefix = strlen(dir) + (dir[strlen(dir) - 1] == '/' ? 0 : 1);
        r = walk_new(args, 1, &wo, &w);
        if (r < 0) {
                warn("cannot list files: %s", strerror(-r));
                goto finish;
        }
        au.walk = w;

        r = o->run(audit_next, &au, audit_result, &au, o->run_ctx);
        if (r < 0) {
                /* Stopped part-way (AuditOptions.run): nothing is judged on half a tree. */
                if (r == -ECONNABORTED)
                        ret = CTL_EXIT_ABORTED;
                goto finish;
        }
        r = audit_finish(&au);
        if (r < 0) {
                warn("Out of memory.");
                goto finish;
        }

        const AuditCounts *c = &au.c;
        if (o->json) {
                fputs("{\"summary\":true,\"manifest\":", stdout);
                (void)output_write_json_string(stdout, manifest);
                printf(",\"created\":%s,\"files\":%zu,\"ok\":%zu,\"changed\":%zu,\"missing\":%zu,\"new\":%zu,"
                       "\"moved\":%zu,\"unreadable\":%zu}\n",
                       au.create ? "true" : "false", au.n_found, c->ok, c->changed, c->missing, c->added, c->moved,
                       c->unreadable);
        } else if (!o->status && au.create)
                warn("audit: a new baseline of %zu files%s", au.n_found, c->unreadable ? ", some unreadable" : "");
        else if (!o->status)
                warn("audit: %zu ok, %zu changed, %zu missing, %zu new, %zu moved%s", c->ok, c->changed, c->missing,
                     c->added, c->moved, c->unreadable ? ", some unreadable" : "");
        ret = (au.create ? 0 : c->changed + c->missing + c->added + c->moved) + c->unreadable > 0 ? CTL_EXIT_FAILED
                                                                                                  : CTL_EXIT_OK;

        if (o->update || au.create) {
                if (c->unreadable > 0) {
                        warn("%s: not %s: %zu %s could not be read", q, au.create ? "made" : "updated", c->unreadable,
                             c->unreadable == 1 ? "file" : "files");
                        ret = CTL_EXIT_FAILED;
                } else {
                        r = audit_update(&au, manifest, dot, tagged);
                        if (r < 0) {
                                warn("%s: cannot %s: %s", q, au.create ? "make it" : "update", strerror(-r));
                                ret = CTL_EXIT_FAILED;
                        }
                }
        }
        if (o->journal)
                audit_journal_summary(dir, manifest, c, au.create && ret == CTL_EXIT_OK, au.n_found);
        if (fflush(stdout) != 0 || ferror(stdout)) {
                warn("write error: %m");
                ret = CTL_EXIT_FAILED;
        }
finish:
        for (size_t i = 0; i < au.n_found; i++)
                free(au.found[i].name);
        free(au.found);
        free(au.listed);
        free(au.by_name);
        free(au.manifest_rel);
        baseline_info_done(&au.info);
        return ret;
}
