/* SPDX-License-Identifier: MIT */
/* ctl.c: fhashctl's verbs but check (check.c), and main */
#include <errno.h>
#include <inttypes.h>
#include <locale.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl/args.h"
#include "ctl/audit.h"
#include "ctl/bus-verbs.h"
#include "ctl/check.h"
#include "ctl/ctl.h"
#include "ctl/lineout.h"
#include "ctl/macro.h"
#include "ctl/output.h"
#include "ctl/run.h"
#include "ctl/walk.h"

typedef struct HashState {
        const Args *args;
        size_t ok, failed, skipped;
        size_t directories;     /* inputs that failed as directories (no -r) */
        uint64_t bytes;
} HashState;

/* A result, as libfhash hands it over: every input of hash is of the options' algorithm(s). */
static void hash_result(const fhash_result *r, void *userdata)
{
        HashState *s = userdata;
        const Args *a = s->args;

        if (r->status == FHASH_SKIPPED) {
                /* In walk order, among the results: the walk goes on while they are printed. */
                _cleanup_free_ char *q = NULL;
                s->skipped++;
                if (output_quote(r->name, &q) >= 0)
                        ctl_err("%s: skipped: %s", q, r->skip);
                /* Every input gets its object: a skipped one says why. */
                if (a->json && a->algos.n > 1)
                        (void)output_write_json_set_result(stdout, r->name, &a->algos, NULL, 0, NULL, r->skip);
                else if (a->json)
                        (void)output_write_json_skipped(stdout, r->name, a->algo, r->skip);
                return;
        }
        if (r->status == FHASH_OK) {
                s->ok++;
                s->bytes += r->size;
                if (a->raw) {
                        uint8_t bin[FHASH_DIGEST_MAX];
                        size_t n = strlen(r->digest) / 2;

                        if (n <= sizeof(bin) && hex_to_bytes(r->digest, bin, n) >= 0)
                                (void)fwrite(bin, 1, n, stdout);
                } else if (a->algos.n > 1 && a->json)
                        (void)output_write_json_set_result(stdout, r->name, &a->algos, r->digest, r->size, NULL, NULL);
                else if (a->algos.n > 1)
                        (void)output_write_set_digests(stdout, a->zero, &a->algos, r->name, r->digest);
                else if (a->json)
                        (void)output_write_json_result(stdout, r->name, a->algo, r->digest, r->size, NULL);
                else
                        (void)output_write_digest(stdout,
                                                  a->no_names ? OUTPUT_NO_NAMES
                                                  : a->tag    ? OUTPUT_TAGGED
                                                  : a->binary ? OUTPUT_BINARY
                                                              : OUTPUT_UNTAGGED,
                                                  a->zero,
                                                  a->algo, r->name, r->digest);
                return;
        }
        s->failed++;
        if (r->status == FHASH_ERROR && r->error == -EISDIR)
                s->directories++;
        const char *reason = r->message ? r->message : "failed";
        if (a->json && a->algos.n > 1)
                (void)output_write_json_set_result(stdout, r->name, &a->algos, NULL, 0, reason, NULL);
        else if (a->json)
                (void)output_write_json_result(stdout, r->name, a->algo, NULL, 0, reason);
        else
                ctl_err_name(r->name, reason);
}

/* The walk as libfhash's source: each entry becomes an input when the library has room for it. */
static int walk_source_next(void *userdata, fhash_input *ret)
{
        Walk *w = userdata;
        WalkEntry e;
        int r;

        r = walk_next(w, &e);
        if (r < 0)
                ctl_err("cannot list files: %s", strerror(-r));
        if (r <= 0)
                return r;
        *ret = (fhash_input){ .path = e.path, .fd = -1, .error = e.error, .skip = e.note };
        return 1;
}

static int verb_hash(Args *a)
{
        _cleanup_(walk_freep) Walk *w = NULL;
        char *stdin_arg[] = { (char *)"-" };
        WalkOptions wo = {
                .recursive = a->recursive,
                .follow = a->follow,
                .one_file_system = a->one_file_system,
                .excludes = a->excludes,
                .n_excludes = a->n_excludes,
        };
        HashState s = { .args = a };
        int r;

        r = walk_new(a->n_rest > 0 ? a->rest : stdin_arg, a->n_rest > 0 ? a->n_rest : 1, &wo, &w);
        if (r < 0) {
                ctl_err("cannot list files: %s", strerror(-r));
                return CTL_EXIT_FAILED;
        }
        /* A person at a terminal who typed no FILE waits for nothing: say what is read. */
        if (a->n_rest == 0 && !a->keyed && isatty(STDIN_FILENO))
                ctl_err("reading standard input (Ctrl-D ends it)");
        r = ctl_run(a, walk_source_next, w, hash_result, &s);
        if (s.directories > 0 && !a->recursive && !a->json)
                ctl_err("to hash the files in a directory, add -r");
        if (a->json) {
                char names[ALGO_SET_NAMES_MAX];

                printf("{\"summary\":true,\"algorithm\":\"%s\",\"files\":%zu,\"ok\":%zu,\"failed\":%zu,"
                       "\"skipped\":%zu,\"bytes\":%" PRIu64 "}\n",
                       algo_set_format(&a->algos, names, sizeof(names)), s.ok + s.failed, s.ok, s.failed,
                       s.skipped, s.bytes);
        }
        if (fflush(stdout) != 0 || ferror(stdout)) {
                ctl_err("write error: %m");
                return CTL_EXIT_FAILED;
        }
        return ctl_run_exit(r, s.failed > 0);
}

static int audit_run_inputs(fhash_source_fn next, void *source_userdata, fhash_result_fn fn, void *userdata, void *ctx)
{
        return ctl_run(ctx, next, source_userdata, fn, userdata);
}

static int verb_audit(Args *a)
{
        AuditOptions o = {
                .algo = a->algo_set ? a->algo : NULL,
                .json = a->json,
                .quiet = a->quiet,
                .status = a->status,
                .update = a->update,
                .create = a->create,
                .attributes = a->attributes,
                .journal = a->journal,
                .run = audit_run_inputs,
                .run_ctx = a,
        };

        if (a->n_rest < 1 || a->n_rest > 2)
                return ctl_usage_error("audit: MANIFEST [DIR] expected");
        if (a->tag || a->recursive || a->zero || a->strict || a->ignore_missing)
                return ctl_usage_error("audit: --tag, -r, -z, --strict and --ignore-missing are not audit options");
        if (streq(a->rest[0], "-") && (a->update || a->create))
                return ctl_usage_error("audit: --update and --create need a MANIFEST file, not standard input");
        return audit_run(a->rest[0], a->n_rest > 1 ? a->rest[1] : ".", &o);
}

static int verb_algorithms(Args *a)
{
        for (const char *const *x = fhash_algorithms(); *x; x++)
                printf("%s\n", *x);
        return CTL_EXIT_OK;
}

/* jobs, watch, cancel, status: these only make sense with fhashd. */
static int verb_bus(Args *a)
{
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        fhash_client_options co = { .bus = a->bus, .address = a->bus == FHASH_BUS_ADDRESS ? a->address : NULL };
        fhash_error e = {};
        bool needs_job = streq(a->verb, "watch") || streq(a->verb, "cancel");
        Progress progress;
        int r;

        if (a->local)
                return ctl_usage_error("%s: needs fhashd, not --local", a->verb);
        if (needs_job ? a->n_rest != 1 : a->n_rest != 0)
                return ctl_usage_error("%s: %s", a->verb, needs_job ? "expects one JOB" : "takes no arguments");

        r = fhash_bus_open(&co, &bus, &e);
        if (r < 0) {
                if (r == -ENOTCONN)
                        ctl_err_unreachable(&e);
                else
                        ctl_err("cannot reach fhashd: %s", e.message);
                return CTL_EXIT_FAILED;
        }
        if (streq(a->verb, "status"))
                r = ctl_bus_status(bus, stdout, &error);
        else if (streq(a->verb, "jobs"))
                r = ctl_bus_list_jobs(bus, stdout, &error);
        else if (streq(a->verb, "cancel")) {
                /* sd_bus_call_method() returns 1 on success: no verdict to carry. */
                r = ctl_bus_cancel(bus, a->rest[0], &error);
                r = MIN(r, 0);
        }
        else {
                progress_init(&progress, a->progress == PROGRESS_OFF ? PROGRESS_OFF : PROGRESS_ON, STDERR_FILENO);
                r = ctl_bus_watch(bus, a->rest[0], &progress, stdout, &error);
        }
        if (r < 0) {
                if (needs_job)
                        ctl_err_job(a->verb, a->rest[0], r, &error);
                else
                        ctl_err("%s: %s", a->verb, sd_bus_error_is_set(&error) && error.message ? error.message : strerror(-r));
                return CTL_EXIT_FAILED;
        }
        return r > 0 ? CTL_EXIT_FAILED : CTL_EXIT_OK;
}

/* Ctrl-C (or a SIGTERM, a hang-up) ends fhashctl as before, but not with the progress line left on the
 * terminal: it is wiped, then the signal is raised again with its default action, so that the shell
 * sees a process killed by it. */
static void on_fatal_signal(int sig)
{
        progress_erase_from_signal();
        (void)raise(sig);
}

static void install_signal_handlers(void)
{
        static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };
        struct sigaction sa = { .sa_handler = on_fatal_signal, .sa_flags = SA_RESETHAND };

        (void)sigemptyset(&sa.sa_mask);
        for (size_t i = 0; i < ELEMENTSOF(sigs); i++) {
                struct sigaction old;

                /* An ignored signal (nohup, a shell's background job) stays ignored. */
                if (sigaction(sigs[i], NULL, &old) >= 0 && old.sa_handler != SIG_IGN)
                        (void)sigaction(sigs[i], &sa, NULL);
        }
}

int ctl_main(int argc, char *argv[])
{
        Args a = {};
        int r, k;

        setlocale(LC_ALL, "");
        install_signal_handlers();
        /* A person reads a terminal: no control character in a name reaches it raw. */
        output_set_terminal(isatty(STDOUT_FILENO));
        r = ctl_parse_args(argc, argv, &a);
        if (r == 0)
                r = CTL_EXIT_OK;
        else if (r < 0)
                r = r == -EINVAL ? CTL_EXIT_USAGE : CTL_EXIT_FAILED;
        else {
                /* Whole lines, at most PIPE_BUF bytes a write(2): the lines of processes that share
                 * a pipe (xargs -P, make -j) never interleave (lineout.h). */
                k = lineout_install(a.zero && a.verb && streq(a.verb, "hash") ? '\0' : '\n');
                if (k < 0)
                        ctl_err("cannot set up standard output: %s", strerror(-k));
                /* ctl_parse_args() only goes on with a verb, but say so rather than crash on NULL. */
                if (!a.verb)
                        r = ctl_usage_error("missing verb");
                else if (streq(a.verb, "hash"))
                        r = verb_hash(&a);
                else if (streq(a.verb, "check"))
                        r = verb_check(&a);
                else if (streq(a.verb, "audit"))
                        r = verb_audit(&a);
                else if (streq(a.verb, "algorithms"))
                        r = verb_algorithms(&a);
                else if (streq(a.verb, "jobs") || streq(a.verb, "watch") || streq(a.verb, "cancel") ||
                         streq(a.verb, "status"))
                        r = verb_bus(&a);
                else
                        r = ctl_usage_error("unknown verb '%s'", a.verb);
        }
        k = lineout_finish();
        if (k < 0 && r == CTL_EXIT_OK) {
                ctl_err("write error: %s", strerror(-k));
                r = CTL_EXIT_FAILED;
        }
        free(a.excludes);
        explicit_bzero(&a.params, sizeof(a.params));
        return r;
}
