/* SPDX-License-Identifier: MIT */
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <locale.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl/bus-client.h"
#include "build-config.h"
#include "ctl/ctl.h"
#include "fhash/fhash-dbus.h"
#include "basic/macro.h"
#include "ctl/manifest.h"
#include "ctl/output.h"
#include "ctl/audit.h"
#include "ctl/progress.h"
#include "ctl/runner.h"
#include "ctl/walk.h"

typedef struct Args {
        const char *verb;
        HashAlgo algo;                 /* algos' first */
        HashAlgoSet algos;             /* -a sha256,blake3: several in one read (hash only) */
        bool algo_set;
        bool recursive, tag, zero, json, follow, one_file_system;
        bool check, binary, no_names;  /* hash -c (check), -b (" *name"), --no-names (hex only) */
        bool raw;                      /* the digest's bytes, one input (b3sum --raw) */
        /* -l/--length BITS (b2sum, cksum), --keyed (the key on stdin, as b3sum), --derive-key CONTEXT */
        const char *length, *derive_key;
        bool keyed;
        HashParams params;             /* from those; the key wiped before exit */
        bool has_params;
        ProgressMode progress;
        char **excludes;
        size_t n_excludes;
        bool local, daemon, no_direct;
        BusKind bus_kind;
        const char *address;
        bool quiet, status, strict, ignore_missing, warn;
        bool no_cache;
        bool update;                   /* audit --update */
        EngineReadStrategy io;
        char **rest;
        size_t n_rest;
} Args;

static const char *program = "fhashctl";

_printf_(1, 2) static void err(const char *fmt, ...)
{
        va_list ap;

        fflush(stdout);
        fprintf(stderr, "%s: ", program);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
}

/* "fhashctl: NAME: reason" with NAME quoted as coreutils' quotef() does. */
static void err_name(const char *name, const char *reason)
{
        _cleanup_free_ char *q = NULL;

        if (output_quote(name, &q) < 0)
                err("%s: %s", name, reason);
        else
                err("%s: %s", q, reason);
}

static const char *const verb_help[][2] = {
        { "hash",
          "Usage: fhashctl hash [OPTION]... [FILE|DIR]...\n"
          "Print a checksum line per FILE ('-' or none: standard input), in the order given,\n"
          "as sha256sum does. Hashes through fhashd unless --local; falls back to in-process\n"
          "hashing (with one note on stderr) if fhashd cannot be reached, unless --daemon.\n\n"
          "  -a, --algorithm=ALGO   digest algorithm (default sha256; see 'fhashctl algorithms');\n"
          "                         up to 4 as ALGO,ALGO: one read, a tagged line per algorithm\n"
          "  -r, --recursive        hash the regular files under each DIR, sorted, depth first\n"
          "      --exclude=GLOB     with -r, skip names or paths matching GLOB (repeatable)\n"
          "      --follow           with -r, follow symbolic links (loops are detected)\n"
          "      --one-file-system  with -r, do not enter other file systems\n"
          "      --tag              BSD-style lines: SHA256 (FILE) = HEX (as cksum --tag)\n"
          "      --untagged         HEX  FILE lines (the default; as cksum --untagged)\n"
          "  -b, --binary           HEX *FILE lines (as sha256sum -b); -t, --text: HEX  FILE\n"
          "      --no-names         the digests alone, one per line (as b3sum --no-names)\n"
          "      --raw              the digest's bytes, not hex, of one FILE (as b3sum --raw)\n"
          "  -l, --length BITS      digest length in bits for blake2b, blake2s, blake3 (as b2sum -l;\n"
          "                         b3sum --length N bytes is -l 8N); 0: the default\n"
          "      --keyed            blake3 keyed hash, the 32-byte key read from stdin (as b3sum)\n"
          "      --derive-key CTX   blake3 key derivation with context CTX (as b3sum)\n"
          "  -c, --check            the same as 'fhashctl check' (as sha256sum -c)\n"
          "  -z, --zero             end lines with NUL, do not escape names\n"
          "      --json             one JSON object per file, then a summary object; errors are in\n"
          "                         the objects (\"error\"), not on stderr; names that are not UTF-8\n"
          "                         carry each bad byte as \\udcXX (Python's surrogateescape)\n"
          "      --progress         draw progress on stderr (only if a terminal) from the start\n"
          "      --no-progress      never draw progress (default: after ~1 s on a terminal)\n"
          "      --no-cache         cache-neutral: add nothing to the page cache, evict nothing\n"
          "                         (O_DIRECT, RWF_DONTCACHE; fhashd's \"dontcache\" option)\n"
          "      --io=HOW           how files are read: auto (default: mapped if cached, O_DIRECT\n"
          "                         if cold), read, mmap or direct; the digests never change\n" },
        { "check",
          "Usage: fhashctl check [OPTION]... [SUMFILE]...\n"
          "Verify the checksums listed in SUMFILEs ('-' or none: standard input) written by\n"
          "sha*sum, md5sum, b2sum, b3sum, xxhsum or cksum --tag. Untagged lines take the algorithm\n"
          "from -a, else from the SUMFILE's name (MD5SUMS, *.sha256, *.b3, *.xxh128, ...), else from\n"
          "the digest length as its usual writer means it (64 hex: sha256, 128: sha512, 32: md5,\n"
          "40: sha1, 16: xxh64, 8: xxh32). Tagged lines name theirs. When no line matches, the other\n"
          "algorithms of that length are named once on stderr.\n\n"
          "  -a, --algorithm=ALGO   algorithm of untagged lines\n"
          "  -l, --length BITS      length of untagged blake3 lines (b3sum --length BITS/8); blake2b\n"
          "                         lines need none (BLAKE2b-256 tags, or the digest's own length)\n"
          "      --ignore-missing   do not fail or report status for missing files\n"
          "  -q, --quiet            do not print OK for each successfully verified file\n"
          "      --status           print nothing; the exit status says it all\n"
          "      --strict           exit non-zero for improperly formatted lines\n"
          "  -w, --warn             warn about improperly formatted lines\n"
          "  -z, --zero             SUMFILE lines end with NUL\n"
          "      --json             one JSON object per file, then a summary object per SUMFILE\n"
          "      --progress, --no-progress, --no-cache, --io=HOW   as for hash\n" },
        { "audit",
          "Usage: fhashctl audit [OPTION]... MANIFEST [DIR]\n"
          "Compare DIR (default '.') with MANIFEST, whose names are relative to DIR (as\n"
          "'cd DIR && fhashctl hash -r .' writes them). Every file is ok, changed, missing, new,\n"
          "or moved (a new file whose digest a missing one had: 'NAME: moved from OLD'). Lines come\n"
          "in walk order as files are hashed, then new and moved files, then missing ones; a\n"
          "summary goes to stderr. Exit status 0 when every file is ok, 1 otherwise.\n\n"
          "  -a, --algorithm=ALGO   algorithm of untagged lines (else as check reads them)\n"
          "  -q, --quiet            do not print ok files\n"
          "      --status           print nothing; the exit status says it all\n"
          "      --json             one object per file (name, status, digest, expected, from),\n"
          "                         then a summary object\n"
          "      --update           write MANIFEST anew from what was found (atomically: a new\n"
          "                         file renamed over it)\n"
          "      --progress, --no-progress, --no-cache, --io=HOW   as for hash\n" },
        { "jobs", "Usage: fhashctl jobs\nList your jobs in fhashd: path, state, algorithm, files and bytes.\n" },
        { "watch", "Usage: fhashctl watch JOB\nFollow a job's progress until it ends (JOB: id or object path).\n"
                   "Exit status 0 if it ended 'done', 1 otherwise.\n" },
        { "cancel", "Usage: fhashctl cancel JOB\nCancel one of your jobs (JOB: id or object path).\n" },
        { "status", "Usage: fhashctl status\nShow fhashd's version, algorithms, workers, jobs and totals.\n" },
        { "algorithms", "Usage: fhashctl algorithms\nList the algorithm names -a accepts, one per line.\n" },
};

static void help_main(FILE *f)
{
        fprintf(f, "Usage: fhashctl [GLOBAL OPTION]... VERB [OPTION]... [ARG]...\n"
                   "Hash files with fhashd, or in-process.\n\n"
                   "Verbs:\n"
                   "  hash FILE|DIR...   print checksums (sha256sum-compatible output)\n"
                   "  check SUMFILE...   verify checksum files\n"
                   "  audit MANIFEST [DIR]  compare a directory with a manifest\n"
                   "  jobs               list your jobs in fhashd\n"
                   "  watch JOB          follow a job's progress\n"
                   "  cancel JOB         cancel a job\n"
                   "  status             show fhashd's state\n"
                   "  algorithms         list algorithms\n\n"
                   "Global options:\n"
                   "      --local            hash in this process, without fhashd\n"
                   "      --daemon           fail instead of falling back to in-process hashing\n"
                   "      --system           talk to fhashd on the system bus (default)\n"
                   "      --user             talk to fhashd on the user's session bus\n"
                   "      --address=ADDR     talk to fhashd on the bus at ADDR\n"
                   "      --no-direct        pass files through the bus, not a direct connection\n"
                   "  -h, --help             show help (for a verb: fhashctl VERB --help)\n"
                   "      --version          show the version\n\n"
                   "Exit status: 0 success, 1 a file failed or did not match, 2 usage error.\n");
}

static int help_verb(const char *verb)
{
        for (size_t i = 0; i < ELEMENTSOF(verb_help); i++)
                if (streq(verb_help[i][0], verb)) {
                        fputs(verb_help[i][1], stdout);
                        return CTL_EXIT_OK;
                }
        help_main(stdout);
        return CTL_EXIT_OK;
}

static int usage_error(const char *fmt, ...) _printf_(1, 2);
static int usage_error(const char *fmt, ...)
{
        va_list ap;

        fprintf(stderr, "%s: ", program);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fprintf(stderr, "\nTry '%s --help' for more information.\n", program);
        return CTL_EXIT_USAGE;
}

enum {
        ARG_TAG = 0x100,
        ARG_JSON,
        ARG_PROGRESS,
        ARG_NO_PROGRESS,
        ARG_EXCLUDE,
        ARG_ONE_FS,
        ARG_FOLLOW,
        ARG_LOCAL,
        ARG_DAEMON,
        ARG_SYSTEM,
        ARG_USER,
        ARG_ADDRESS,
        ARG_NO_DIRECT,
        ARG_QUIET,
        ARG_STATUS,
        ARG_STRICT,
        ARG_IGNORE_MISSING,
        ARG_NO_CACHE,
        ARG_IO,
        ARG_VERSION,
        ARG_UNTAGGED,
        ARG_NO_NAMES,
        ARG_RAW,
        ARG_KEYED,
        ARG_UPDATE,
        ARG_DERIVE_KEY,
};

/* Returns -1 to go on, or an exit code. */
static int parse_params(Args *a);

static int parse_args(int argc, char *argv[], Args *a)
{
        static const struct option options[] = {
                { "algorithm", required_argument, NULL, 'a' },
                { "recursive", no_argument, NULL, 'r' },
                { "tag", no_argument, NULL, ARG_TAG },
                { "zero", no_argument, NULL, 'z' },
                { "json", no_argument, NULL, ARG_JSON },
                { "progress", no_argument, NULL, ARG_PROGRESS },
                { "no-progress", no_argument, NULL, ARG_NO_PROGRESS },
                { "exclude", required_argument, NULL, ARG_EXCLUDE },
                { "one-file-system", no_argument, NULL, ARG_ONE_FS },
                { "follow", no_argument, NULL, ARG_FOLLOW },
                { "local", no_argument, NULL, ARG_LOCAL },
                { "daemon", no_argument, NULL, ARG_DAEMON },
                { "system", no_argument, NULL, ARG_SYSTEM },
                { "user", no_argument, NULL, ARG_USER },
                { "address", required_argument, NULL, ARG_ADDRESS },
                { "no-direct", no_argument, NULL, ARG_NO_DIRECT },
                { "quiet", no_argument, NULL, ARG_QUIET },
                { "status", no_argument, NULL, ARG_STATUS },
                { "strict", no_argument, NULL, ARG_STRICT },
                { "ignore-missing", no_argument, NULL, ARG_IGNORE_MISSING },
                { "no-cache", no_argument, NULL, ARG_NO_CACHE },
                { "io", required_argument, NULL, ARG_IO },
                { "warn", no_argument, NULL, 'w' },
                { "check", no_argument, NULL, 'c' },
                { "binary", no_argument, NULL, 'b' },
                { "text", no_argument, NULL, 't' },
                { "untagged", no_argument, NULL, ARG_UNTAGGED },
                { "no-names", no_argument, NULL, ARG_NO_NAMES },
                { "raw", no_argument, NULL, ARG_RAW },
                { "length", required_argument, NULL, 'l' },
                { "keyed", no_argument, NULL, ARG_KEYED },
                { "update", no_argument, NULL, ARG_UPDATE },
                { "derive-key", required_argument, NULL, ARG_DERIVE_KEY },
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, ARG_VERSION },
                {}
        };
        bool help = false;
        int c;

        a->algo = HASH_SHA256;
        a->algos = HASH_ALGO_SET_ONE(HASH_SHA256);
        a->progress = PROGRESS_AUTO;
        a->bus_kind = BUS_KIND_SYSTEM;

        /* getopt names the program by argv[0] in its messages ("/usr/bin/fhashctl: unrecognized
         * option"), and ours say "Try 'fhashctl --help'": one name for both. */
        if (argc > 0)
                argv[0] = (char *)program;
        while ((c = getopt_long(argc, argv, "a:rzwhcbtql:", options, NULL)) >= 0) {
                switch (c) {
                case 'a': {
                        int k = hash_algo_set_parse(optarg, &a->algos);

                        if (k == -E2BIG)
                                return usage_error("-a: at most %d algorithms in one read, not '%s'", HASH_SET_MAX,
                                                   optarg);
                        if (k == -ENOTUNIQ)
                                return usage_error("-a: '%s' names an algorithm twice", optarg);
                        if (k < 0)
                                return usage_error("unknown algorithm '%s' (valid: %s; several: -a %s)", optarg,
                                                   hash_algo_list(), "sha256,blake3");
                        a->algo = a->algos.algos[0];
                        a->algo_set = true;
                        break;
                }
                case 'r':
                        a->recursive = true;
                        break;
                case ARG_TAG:
                        a->tag = true;
                        break;
                case ARG_UNTAGGED:
                        a->tag = false;
                        break;
                case 'c':
                        a->check = true;
                        break;
                case 'b':
                        a->binary = true;
                        break;
                case 't':
                        /* Text mode: on Linux the same bytes and the same "  " line as the default. */
                        a->binary = false;
                        break;
                case ARG_NO_NAMES:
                        a->no_names = true;
                        break;
                case ARG_RAW:
                        a->raw = true;
                        break;
                case 'l':
                        a->length = optarg;
                        break;
                case ARG_KEYED:
                        a->keyed = true;
                        break;
                case ARG_UPDATE:
                        a->update = true;
                        break;
                case ARG_DERIVE_KEY:
                        a->derive_key = optarg;
                        break;
                case 'z':
                        a->zero = true;
                        break;
                case ARG_JSON:
                        a->json = true;
                        break;
                case ARG_PROGRESS:
                        a->progress = PROGRESS_ON;
                        break;
                case ARG_NO_PROGRESS:
                        a->progress = PROGRESS_OFF;
                        break;
                case ARG_EXCLUDE: {
                        char **n = reallocarray(a->excludes, a->n_excludes + 1, sizeof(char *));
                        if (!n) {
                                err("Out of memory.");
                                return CTL_EXIT_FAILED;
                        }
                        a->excludes = n;
                        a->excludes[a->n_excludes++] = optarg;
                        break;
                }
                case ARG_ONE_FS:
                        a->one_file_system = true;
                        break;
                case ARG_FOLLOW:
                        a->follow = true;
                        break;
                case ARG_LOCAL:
                        a->local = true;
                        break;
                case ARG_DAEMON:
                        a->daemon = true;
                        break;
                case ARG_SYSTEM:
                        a->bus_kind = BUS_KIND_SYSTEM;
                        break;
                case ARG_USER:
                        a->bus_kind = BUS_KIND_USER;
                        break;
                case ARG_ADDRESS:
                        a->bus_kind = BUS_KIND_ADDRESS;
                        a->address = optarg;
                        break;
                case ARG_NO_DIRECT:
                        a->no_direct = true;
                        break;
                case 'q':
                case ARG_QUIET:
                        a->quiet = true;
                        break;
                case ARG_STATUS:
                        a->status = true;
                        break;
                case ARG_STRICT:
                        a->strict = true;
                        break;
                case ARG_IGNORE_MISSING:
                        a->ignore_missing = true;
                        break;
                case ARG_NO_CACHE:
                        a->no_cache = true;
                        break;
                case ARG_IO:
                        a->io = engine_read_strategy_from_string(optarg);
                        if (a->io < 0)
                                return usage_error("--io: \"%s\" is not one of auto, read, mmap, direct", optarg);
                        break;
                case 'w':
                        a->warn = true;
                        break;
                case 'h':
                        help = true;
                        break;
                case ARG_VERSION:
                        printf("fhashctl %s\n", FHASH_VERSION);
                        return CTL_EXIT_OK;
                default:
                        fprintf(stderr, "Try '%s --help' for more information.\n", program);
                        return CTL_EXIT_USAGE;
                }
        }

        if (optind < argc)
                a->verb = argv[optind++];
        a->rest = argv + optind;
        a->n_rest = (size_t)(argc - optind);

        if (help) {
                if (!a->verb)
                        help_main(stdout);
                else
                        help_verb(a->verb);
                return CTL_EXIT_OK;
        }
        if (!a->verb)
                return usage_error("missing verb");
        /* sha256sum -c: "fhashctl hash -c SUMS" is "fhashctl check SUMS". */
        if (a->check && streq(a->verb, "hash"))
                a->verb = "check";
        if (a->check && !streq(a->verb, "check"))
                return usage_error("-c/--check is for hash and check");
        if ((a->binary || a->no_names) && streq(a->verb, "check"))
                return usage_error("check: --binary and --no-names are options of hash");
        if (a->no_names && (a->tag || a->json))
                return usage_error("--no-names excludes --tag and --json");
        if (a->raw && (!streq(a->verb, "hash") || a->n_rest > 1 || a->recursive || a->tag || a->json || a->zero))
                return usage_error("--raw writes the digest of one input (not -r, --tag, --json, -z)");
        if (a->local && a->daemon)
                return usage_error("--local and --daemon exclude each other");
        if ((a->tag ? 1 : 0) + (a->json ? 1 : 0) > 1)
                return usage_error("--tag and --json exclude each other");
        if (a->json && a->zero)
                return usage_error("--zero and --json exclude each other");
        if (a->update && !streq(a->verb, "audit"))
                return usage_error("--update is an option of audit");
        if (a->algos.n > 1) {
                if (!streq(a->verb, "hash"))
                        return usage_error("%s: -a takes one algorithm (several in one read are for hash)", a->verb);
                /* One line per algorithm: only a tag says which line is which. */
                if (a->binary || a->no_names || a->raw)
                        return usage_error("several algorithms are written as tagged lines, one per algorithm "
                                           "(not --binary, --no-names or --raw)");
                if (a->length || a->keyed || a->derive_key)
                        return usage_error("--length, --keyed and --derive-key take one algorithm");
        }
        if (a->length || a->keyed || a->derive_key)
                return parse_params(a);
        return -1;
}

/* A key of exactly HASH_KEY_SIZE bytes on standard input, as b3sum --keyed reads it. */
static int read_key(uint8_t key[static HASH_KEY_SIZE])
{
        uint8_t buf[HASH_KEY_SIZE + 1];
        size_t n = 0;

        while (n < sizeof(buf)) {
                ssize_t k = read(STDIN_FILENO, buf + n, sizeof(buf) - n);

                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0) {
                        err("--keyed: cannot read the key from standard input: %m");
                        explicit_bzero(buf, sizeof(buf));
                        return CTL_EXIT_FAILED;
                }
                if (k == 0)
                        break;
                n += (size_t)k;
        }
        if (n != HASH_KEY_SIZE) {
                explicit_bzero(buf, sizeof(buf));
                err("--keyed: expected %d key bytes on standard input, found %s%zu", HASH_KEY_SIZE,
                    n > HASH_KEY_SIZE ? "more than " : "", MIN(n, (size_t)HASH_KEY_SIZE));
                return CTL_EXIT_FAILED;
        }
        memcpy(key, buf, HASH_KEY_SIZE);
        explicit_bzero(buf, sizeof(buf));
        return -1;
}

/* --length, --keyed, --derive-key into a->params, checked against -a. Returns -1 to go on. */
static int parse_params(Args *a)
{
        HashParams *p = &a->params;
        int r;

        bool check = streq(a->verb, "check");

        if (check && (a->keyed || a->derive_key))
                return usage_error("check: --keyed and --derive-key are options of hash (as b3sum --check takes neither)");
        if (!streq(a->verb, "hash") && !check)
                return usage_error("--length, --keyed and --derive-key are options of hash (--length: and check)");
        if (a->length) {
                char *end = NULL;
                unsigned long bits;

                errno = 0;
                bits = strtoul(a->length, &end, 10);
                if (errno != 0 || !end || *end || end == a->length || a->length[0] == '-' || bits % 8 != 0 ||
                    bits > (unsigned long)HASH_DIGEST_MAX * 8)
                        return usage_error("--length: '%s' is not a number of bits that is a multiple of 8 "
                                           "(at most %d; b3sum's --length N bytes is --length %s)",
                                           a->length, HASH_DIGEST_MAX * 8, "8N");
                p->out_len = (uint32_t)(bits / 8); /* 0: the default, as b2sum -l 0 */
        }
        if (a->derive_key)
                p->context = a->derive_key;
        p->keyed = a->keyed;
        /* check -l without -a: the lines' own algorithms, those that take a length held to it. */
        if (check && !a->algo_set)
                return -1;
        r = hash_params_check(a->algo, p);
        if (r == -EOPNOTSUPP)
                return usage_error("%s takes no %s (--length: blake2b, blake2s, blake3; --keyed, --derive-key: blake3)",
                                   hash_algo_to_string(a->algo),
                                   p->out_len && !(hash_algo_params(a->algo) & HASH_PARAM_LENGTH) ? "--length"
                                   : p->keyed && !(hash_algo_params(a->algo) & HASH_PARAM_KEY) ? "--keyed"
                                   : p->context                                                  ? "--derive-key"
                                                                                                 : "--length");
        if (r == -ERANGE)
                return usage_error("--length: %s digests are at most %zu bits", hash_algo_to_string(a->algo),
                                   hash_algo_digest_max(a->algo) * 8);
        if (r < 0)
                return usage_error("--keyed and --derive-key exclude each other");
        if (a->keyed) {
                for (size_t i = 0; i < a->n_rest; i++)
                        if (streq(a->rest[i], "-"))
                                return usage_error("--keyed reads the key from standard input: it cannot be a file too");
                if (a->n_rest == 0)
                        return usage_error("--keyed reads the key from standard input: name the files to hash");
                r = read_key(p->key);
                if (r >= 0)
                        return r;
        }
        /* check takes each line's length from the manifest (ManifestEntry.out_len), not from here. */
        a->has_params = !check && (p->out_len != 0 || p->keyed || p->context);
        return -1;
}

/* Runs the items of source through fhashd or in-process, per the options, hashing while the source
 * still produces them. Returns 0, or -errno after saying why. */
static int run_items(const Args *a, const RunSource *source, RunResultFn fn, void *userdata)
{
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        const RunReadOptions ro = { .dontcache = a->no_cache, .strategy = a->io,
                                    .params = a->has_params ? &a->params : NULL,
                                    .algos = a->algos.n > 1 ? &a->algos : NULL };
        sd_bus *bus = NULL;
        Progress progress;
        int r;

        progress_init(&progress, a->status ? PROGRESS_OFF : a->progress, STDERR_FILENO);

        if (!a->local) {
                r = bus_client_open(a->bus_kind, a->address, &bus, &error);
                if (r < 0) {
                        const char *why = sd_bus_error_is_set(&error) && error.message ? error.message
                                                                                         : strerror(-r);
                        if (a->daemon) {
                                err("cannot reach fhashd: %s", why);
                                return r;
                        }
                        err("fhashd is not reachable (%s); hashing in-process", why);
                        sd_bus_error_free(&error);
                }
        }
        if (bus) {
                if (!a->no_direct)
                        (void)bus_client_open_direct(&bus);
                r = bus_client_run(bus, source, &ro, fn, userdata, &progress, &error);
                sd_bus_flush_close_unref(bus);
                if (r < 0) {
                        err("hashing through fhashd failed: %s",
                            sd_bus_error_is_set(&error) && error.message ? error.message : strerror(-r));
                        return r;
                }
                return 0;
        }
        r = run_local(source, &ro, fn, userdata, &progress);
        if (r < 0)
                err("cannot start the hashing engine: %s", strerror(-r));
        return r;
}

typedef struct HashState {
        const Args *args;
        size_t ok, failed, skipped;
        uint64_t bytes;
} HashState;

static void hash_result(const RunItem *item, const RunResult *r, void *userdata)
{
        HashState *s = userdata;
        const Args *a = s->args;

        if (r->status == RUN_SKIPPED) {
                /* In walk order, among the results: the walk goes on while they are printed. */
                _cleanup_free_ char *q = NULL;
                s->skipped++;
                if (output_quote(item->name, &q) >= 0)
                        err("%s: skipped: %s", q, item->note);
                /* Every input gets its object: a skipped one says why. */
                if (a->json && a->algos.n > 1)
                        (void)output_write_json_set_result(stdout, item->name, &a->algos, NULL, 0, NULL, item->note);
                else if (a->json)
                        (void)output_write_json_skipped(stdout, item->name, item->algo, item->note);
                return;
        }
        if (r->status == RUN_OK) {
                s->ok++;
                s->bytes += r->size;
                if (a->raw) {
                        uint8_t bin[HASH_DIGEST_MAX];
                        size_t n = strlen(r->hex) / 2;

                        if (n <= sizeof(bin) && hash_from_hex(r->hex, bin, n) >= 0)
                                (void)fwrite(bin, 1, n, stdout);
                } else if (a->algos.n > 1 && a->json)
                        (void)output_write_json_set_result(stdout, item->name, &a->algos, r->hex, r->size, NULL, NULL);
                else if (a->algos.n > 1)
                        (void)output_write_set_digests(stdout, a->zero, &a->algos, item->name, r->hex);
                else if (a->json)
                        (void)output_write_json_result(stdout, item->name, item->algo, r->hex, r->size, NULL);
                else
                        (void)output_write_digest(stdout,
                                                  a->no_names ? OUTPUT_NO_NAMES
                                                  : a->tag    ? OUTPUT_TAGGED
                                                  : a->binary ? OUTPUT_BINARY
                                                              : OUTPUT_UNTAGGED,
                                                  a->zero,
                                                  item->algo, item->name, r->hex);
                return;
        }
        s->failed++;
        const char *reason = r->message ?: run_result_reason(r);
        if (a->json && a->algos.n > 1)
                (void)output_write_json_set_result(stdout, item->name, &a->algos, NULL, 0, reason, NULL);
        else if (a->json)
                (void)output_write_json_result(stdout, item->name, item->algo, NULL, 0, reason);
        else
                err_name(item->name, reason);
}

/* The walk as a RunSource: each entry becomes an item when the runner has room for it. */
typedef struct WalkSource {
        Walk *walk;
        HashAlgo algo;
} WalkSource;

static int walk_source_next(void *userdata, RunItem *ret)
{
        WalkSource *ws = userdata;
        WalkEntry e;
        int r;

        r = walk_next(ws->walk, &e);
        if (r < 0)
                err("cannot list files: %s", strerror(-r));
        if (r <= 0)
                return r;
        *ret = (RunItem){ .name = e.path, .path = e.path, .algo = ws->algo, .error = e.error, .note = e.note };
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
                err("cannot list files: %s", strerror(-r));
                return CTL_EXIT_FAILED;
        }
        WalkSource ws = { .walk = w, .algo = a->algo };
        RunSource source = { .next = walk_source_next, .userdata = &ws };

        r = run_items(a, &source, hash_result, &s);
        if (a->json) {
                char names[HASH_SET_NAMES_MAX];

                printf("{\"summary\":true,\"algorithm\":\"%s\",\"files\":%zu,\"ok\":%zu,\"failed\":%zu,"
                       "\"skipped\":%zu,\"bytes\":%" PRIu64 "}\n",
                       hash_algo_set_format(&a->algos, names, sizeof(names)), s.ok + s.failed, s.ok, s.failed,
                       s.skipped, s.bytes);
        }
        if (fflush(stdout) != 0 || ferror(stdout)) {
                err("write error: %m");
                return CTL_EXIT_FAILED;
        }
        return r < 0 || s.failed > 0 ? CTL_EXIT_FAILED : CTL_EXIT_OK;
}

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
                err("%s: no line matched as %s; if another tool wrote it, try %s", q, hash_algo_to_string(used),
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
                                if (a->ignore_missing && access(e->name, F_OK) < 0 && errno == ENOENT)
                                        continue;
                                cm->n_items++;
                                s->last_algo = e->algo;
                                *ret = (RunItem){ .name = e->name, .path = e->name, .algo = e->algo,
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
                        err("%s: %s", cm->q, strerror(-cm->read_error));
                        if (a->json)
                                check_json_summary(cm, 0, 0, 0, strerror(-cm->read_error));
                        s->failed = true;
                        return;
                }
                if (a->warn)
                        for (size_t i = 0; i < m->n_bad; i++)
                                err("%s: %u: improperly formatted %s%schecksum line", cm->q, m->bad_lines[i],
                                    a->algo_set ? hash_algo_tag(a->algo) : "", a->algo_set ? " " : "");
                if (m->n_entries == 0) {
                        err("%s: no properly formatted checksum lines found", cm->q);
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
                                err("WARNING: %zu %s improperly formatted", m->n_bad,
                                    plural(m->n_bad, "line is", "lines are"));
                        if (s->unreadable > 0)
                                err("WARNING: %zu listed %s could not be read", s->unreadable,
                                    plural(s->unreadable, "file", "files"));
                        if (s->mismatched > 0)
                                err("WARNING: %zu computed %s did NOT match", s->mismatched,
                                    plural(s->mismatched, "checksum", "checksums"));
                }
                if (a->ignore_missing && cm->n_items == 0) {
                        if (!a->status)
                                err("%s: no file was verified", cm->q);
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
                        check_json(item, r, "unreadable", r->message ?: run_result_reason(r));
                        return;
                }
                /* coreutils names the unreadable file even with --status. */
                err_name(item->name, r->message ?: run_result_reason(r));
                if (a->status)
                        return;
                verdict = "FAILED open or read";
        }
        (void)output_write_check_name(stdout, item->name);
        printf(": %s\n", verdict);
}

static int verb_check(Args *a)
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
                return usage_error("check: --tag and --recursive are options of hash");
        s.manifests = calloc(s.n_files, sizeof(*s.manifests));
        if (!s.manifests) {
                err("Out of memory.");
                return CTL_EXIT_FAILED;
        }
        r = run_items(a, &source, check_result, &s);
        for (size_t i = 0; i < s.n_files; i++) {
                manifest_free(s.manifests[i].m);
                free(s.manifests[i].q);
        }
        free(s.manifests);
        if (r == -ENOMEM)
                err("Out of memory.");
        if (fflush(stdout) != 0 || ferror(stdout)) {
                err("write error: %m");
                return CTL_EXIT_FAILED;
        }
        return r < 0 || s.failed ? CTL_EXIT_FAILED : CTL_EXIT_OK;
}

static int audit_run_items(const RunSource *source, RunResultFn fn, void *userdata, void *ctx)
{
        return run_items(ctx, source, fn, userdata);
}

static int verb_audit(Args *a)
{
        AuditOptions o = {
                .algo = a->algo_set ? a->algo : _HASH_ALGO_INVALID,
                .json = a->json,
                .quiet = a->quiet,
                .status = a->status,
                .update = a->update,
                .run = audit_run_items,
                .run_ctx = a,
        };

        if (a->n_rest < 1 || a->n_rest > 2)
                return usage_error("audit: MANIFEST [DIR] expected");
        if (a->tag || a->recursive || a->zero || a->strict || a->ignore_missing)
                return usage_error("audit: --tag, -r, -z, --strict and --ignore-missing are not audit options");
        if (streq(a->rest[0], "-") && a->update)
                return usage_error("audit: --update needs a MANIFEST file, not standard input");
        return audit_run(a->rest[0], a->n_rest > 1 ? a->rest[1] : ".", &o);
}

static int verb_algorithms(Args *a)
{
        for (HashAlgo x = 0; x < _HASH_ALGO_MAX; x++)
                printf("%s\n", hash_algo_to_string(x));
        return CTL_EXIT_OK;
}

/* jobs, watch, cancel, status: these only make sense with fhashd. */
static int verb_bus(Args *a)
{
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        bool needs_job = streq(a->verb, "watch") || streq(a->verb, "cancel");
        Progress progress;
        int r;

        if (a->local)
                return usage_error("%s: needs fhashd, not --local", a->verb);
        if (needs_job ? a->n_rest != 1 : a->n_rest != 0)
                return usage_error("%s: %s", a->verb, needs_job ? "expects one JOB" : "takes no arguments");

        r = bus_client_open(a->bus_kind, a->address, &bus, &error);
        if (r < 0) {
                err("cannot reach fhashd: %s",
                    sd_bus_error_is_set(&error) && error.message ? error.message : strerror(-r));
                return CTL_EXIT_FAILED;
        }
        if (streq(a->verb, "status"))
                r = bus_client_status(bus, stdout, &error);
        else if (streq(a->verb, "jobs"))
                r = bus_client_list_jobs(bus, stdout, &error);
        else if (streq(a->verb, "cancel")) {
                /* sd_bus_call_method() returns 1 on success: no verdict to carry. */
                r = bus_client_cancel(bus, a->rest[0], &error);
                r = MIN(r, 0);
        }
        else {
                progress_init(&progress, a->progress == PROGRESS_OFF ? PROGRESS_OFF : PROGRESS_ON, STDERR_FILENO);
                r = bus_client_watch(bus, a->rest[0], &progress, stdout, &error);
        }
        if (r < 0) {
                err("%s: %s", a->verb, sd_bus_error_is_set(&error) && error.message ? error.message : strerror(-r));
                return CTL_EXIT_FAILED;
        }
        return r > 0 ? CTL_EXIT_FAILED : CTL_EXIT_OK;
}

int ctl_main(int argc, char *argv[])
{
        Args a = {};
        int r;

        setlocale(LC_ALL, "");
        r = parse_args(argc, argv, &a);
        if (r < 0) {
                /* parse_args() only goes on (< 0) with a verb, but say so rather than crash on NULL. */
                if (!a.verb)
                        r = usage_error("missing verb");
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
                        r = usage_error("unknown verb '%s'", a.verb);
        }
        free(a.excludes);
        hash_params_wipe(&a.params);
        return r;
}
