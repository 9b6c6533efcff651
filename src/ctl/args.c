/* SPDX-License-Identifier: MIT */
/* args.c: fhashctl's command line: options, help, diagnostics */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "build-config.h"
#include "fhash/fhash-dbus.h"
#include "ctl/args.h"
#include "ctl/baseline.h"
#include "ctl/exit-status.h"
#include "ctl/macro.h"
#include "ctl/output.h"

const char *const ctl_program = "fhashctl";

void ctl_err(const char *fmt, ...)
{
        va_list ap;

        fflush(stdout);
        fprintf(stderr, "%s: ", ctl_program);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
}

void ctl_err_name(const char *name, const char *reason)
{
        _cleanup_free_ char *q = NULL;

        if (output_quote(name, &q) < 0)
                ctl_err("%s: %s", name, reason);
        else
                ctl_err("%s: %s", q, reason);
}

static const char *const verb_help[][2] = {
        { "hash",
          "Usage: fhashctl hash [OPTION]... [FILE|DIR]...\n"
          "Print a checksum line per FILE ('-' or none: standard input), in the order given,\n"
          "as sha256sum does. Hashes through fhashd unless --local; falls back to in-process\n"
          "hashing (with one note on stderr) if fhashd cannot be reached, unless --daemon.\n"
          "When fhashd goes away (a restart, a crash), the files without a result go to the\n"
          "next one, or in-process unless --daemon; exit 3 if the run cannot go on.\n\n"
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
          "      --block-size=BYTES fsverity's tree block size, 1024 to 65536 (default 4096;\n"
          "                         as fsverity digest --block-size)\n"
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
          "                         if cold), read, mmap or direct; the digests never change\n"
          "      --priority=P       normal (default), interactive (before your other jobs) or\n"
          "                         background (idle CPU and disk time only, nothing left in the\n"
          "                         page cache; fhashd serves every other job first)\n"
          "      --background       the same as --priority=background\n" },
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
          "      --progress, --no-progress, --no-cache, --io=HOW   as for hash\n"
          "      --priority=P, --background                        as for hash\n" },
        { "audit",
          "Usage: fhashctl audit [OPTION]... MANIFEST [DIR]\n"
          "Compare DIR (default '.') with MANIFEST, whose names are relative to DIR (as\n"
          "'cd DIR && fhashctl hash -r .' writes them). Every file is ok, changed, missing, new,\n"
          "or moved (a new file whose digest a missing one had: 'NAME: moved from OLD'). Lines come\n"
          "in walk order as files are hashed, then new and moved files, then missing ones; a\n"
          "summary goes to stderr. Exit status 0 when every file is ok, 1 otherwise, 3 when the\n"
          "run stopped before every file had its result.\n\n"
          "  -a, --algorithm=ALGO   algorithm of untagged lines (else as check reads them)\n"
          "  -q, --quiet            do not print ok files\n"
          "      --status           print nothing; the exit status says it all\n"
          "      --json             one object per file (name, status, digest, expected, from),\n"
          "                         then a summary object\n"
          "      --update           write MANIFEST anew from what was found (atomically: a new\n"
          "                         file renamed over it); a missing or empty MANIFEST is made\n"
          "                         (a baseline: the attributes it records are compared too)\n"
          "      --create           make a missing or empty MANIFEST (as --update), only read one\n"
          "                         that exists: the first run of a scheduled audit\n"
          "      --attributes[=LIST]  record and compare mode, uid, gid, ino, mtime, ctime, xattrs\n"
          "                         (LIST: some of them joined by ','; default all)\n"
          "      --journal          also send each finding to the journal (MESSAGE_ID per kind)\n"
          "      --progress, --no-progress, --no-cache, --io=HOW   as for hash\n"
          "      --priority=P, --background                        as for hash\n" },
        { "jobs", "Usage: fhashctl jobs\nList your jobs in fhashd: path, state, algorithm, files and bytes.\n" },
        { "watch", "Usage: fhashctl watch [--progress|--no-progress] JOB\n"
                   "Follow a job's progress until it ends (JOB: id or object path): a progress line on\n"
                   "stderr when it is a terminal, else (or with --no-progress) a line on stdout each time\n"
                   "the job moves; then a line with how it ended. Exit status 0 if it ended 'done', 1\n"
                   "otherwise.\n" },
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
                   "      --version          show the version\n"
                   "      --as TOOL          be TOOL, first argument only: md5sum, sha1sum, sha224sum,\n"
                   "                         sha256sum, sha384sum, sha512sum, b2sum, cksum, sum, b3sum,\n"
                   "                         xxhsum, xxh32sum, xxh64sum, xxh128sum, xxh3sum (as links of\n"
                   "                         those names in " FHASH_TOOLSDIR " do)\n\n"
                   "Exit status: 0 success, 1 a file failed or did not match, 2 usage error,\n"
                   "3 hash, check or audit stopped before every file had its result (fhashd went\n"
                   "away and none could be reached with --daemon, or it stayed busy past\n"
                   "FHASHCTL_BUSY_TIMEOUT): what was printed is a part.\n");
}

static void help_verb(const char *verb)
{
        for (size_t i = 0; i < ELEMENTSOF(verb_help); i++)
                if (streq(verb_help[i][0], verb)) {
                        fputs(verb_help[i][1], stdout);
                        return;
                }
        help_main(stdout);
}

_printf_(1, 0) static void say_usage(const char *fmt, va_list ap)
{
        fprintf(stderr, "%s: ", ctl_program);
        vfprintf(stderr, fmt, ap);
        fprintf(stderr, "\nTry '%s --help' for more information.\n", ctl_program);
}

int ctl_usage_error(const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        say_usage(fmt, ap);
        va_end(ap);
        return CTL_EXIT_USAGE;
}

/* A usage error inside the parser: said as ctl_usage_error() says it; -EINVAL to return. */
_printf_(1, 2) static int bad_usage(const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        say_usage(fmt, ap);
        va_end(ap);
        return -EINVAL;
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
        ARG_BLOCK_SIZE,
        ARG_PRIORITY,
        ARG_BACKGROUND,
        ARG_ATTRIBUTES,
        ARG_JOURNAL,
        ARG_CREATE,
};

/* Options that only set one of Args' flags (to true, or to false where the value says so). -t is
 * text mode: on Linux the same bytes and the same "  " line as the default. One line per topic. */
#define FLAG(opt, field, value) { (opt), offsetof(Args, field), (value) }
static const struct {
        int opt;
        size_t offset;
        bool value;
} flag_options[] = {
        FLAG('r', recursive, true), FLAG(ARG_ONE_FS, one_file_system, true), FLAG(ARG_FOLLOW, follow, true),
        FLAG(ARG_TAG, tag, true), FLAG(ARG_UNTAGGED, tag, false), FLAG('b', binary, true),
        FLAG('t', binary, false), FLAG(ARG_NO_NAMES, no_names, true), FLAG(ARG_RAW, raw, true),
        FLAG('z', zero, true), FLAG(ARG_JSON, json, true), FLAG('c', check, true),
        FLAG(ARG_KEYED, keyed, true), FLAG(ARG_UPDATE, update, true), FLAG(ARG_JOURNAL, journal, true),
        FLAG(ARG_CREATE, create, true),
        FLAG('w', warn, true), FLAG('h', help, true),
        FLAG(ARG_LOCAL, local, true), FLAG(ARG_DAEMON, daemon, true), FLAG(ARG_NO_DIRECT, no_direct, true),
        FLAG(ARG_NO_CACHE, no_cache, true),
        FLAG('q', quiet, true), FLAG(ARG_QUIET, quiet, true), FLAG(ARG_STATUS, status, true),
        FLAG(ARG_STRICT, strict, true), FLAG(ARG_IGNORE_MISSING, ignore_missing, true),
};
#undef FLAG

/* Sets the flag opt stands for; false when it is not a flag. */
static bool set_flag(Args *a, int opt)
{
        for (size_t i = 0; i < ELEMENTSOF(flag_options); i++)
                if (flag_options[i].opt == opt) {
                        *(bool *)((char *)a + flag_options[i].offset) = flag_options[i].value;
                        return true;
                }
        return false;
}

static int parse_params(Args *a);

/* --priority's names: those of the jobs' option "priority" (fhash-dbus.h), fhash_priority's order. */
static int priority_from_string(const char *s, fhash_priority *ret)
{
        static const char *const names[] = { [FHASH_PRIORITY_NORMAL] = FHASH_PRIORITY_NAME_NORMAL,
                                             [FHASH_PRIORITY_INTERACTIVE] = FHASH_PRIORITY_NAME_INTERACTIVE,
                                             [FHASH_PRIORITY_BACKGROUND] = FHASH_PRIORITY_NAME_BACKGROUND };

        for (size_t i = 0; s && i < ELEMENTSOF(names); i++)
                if (streq(names[i], s)) {
                        *ret = (fhash_priority)i;
                        return 0;
                }
        return -EINVAL;
}

/* The long options, a line per topic. */
static const struct option options[] = {
        { "algorithm", required_argument, NULL, 'a' }, { "length", required_argument, NULL, 'l' },
        { "keyed", no_argument, NULL, ARG_KEYED }, { "derive-key", required_argument, NULL, ARG_DERIVE_KEY },
        { "block-size", required_argument, NULL, ARG_BLOCK_SIZE },
        { "recursive", no_argument, NULL, 'r' }, { "exclude", required_argument, NULL, ARG_EXCLUDE },
        { "one-file-system", no_argument, NULL, ARG_ONE_FS }, { "follow", no_argument, NULL, ARG_FOLLOW },
        { "tag", no_argument, NULL, ARG_TAG }, { "untagged", no_argument, NULL, ARG_UNTAGGED },
        { "binary", no_argument, NULL, 'b' }, { "text", no_argument, NULL, 't' },
        { "no-names", no_argument, NULL, ARG_NO_NAMES },
        { "raw", no_argument, NULL, ARG_RAW }, { "zero", no_argument, NULL, 'z' },
        { "json", no_argument, NULL, ARG_JSON }, { "check", no_argument, NULL, 'c' },
        { "update", no_argument, NULL, ARG_UPDATE }, { "journal", no_argument, NULL, ARG_JOURNAL },
        { "create", no_argument, NULL, ARG_CREATE },
        { "attributes", optional_argument, NULL, ARG_ATTRIBUTES },
        { "local", no_argument, NULL, ARG_LOCAL }, { "daemon", no_argument, NULL, ARG_DAEMON },
        { "system", no_argument, NULL, ARG_SYSTEM }, { "user", no_argument, NULL, ARG_USER },
        { "address", required_argument, NULL, ARG_ADDRESS },
        { "no-direct", no_argument, NULL, ARG_NO_DIRECT }, { "no-cache", no_argument, NULL, ARG_NO_CACHE },
        { "io", required_argument, NULL, ARG_IO },
        { "priority", required_argument, NULL, ARG_PRIORITY }, { "background", no_argument, NULL, ARG_BACKGROUND },
        { "quiet", no_argument, NULL, ARG_QUIET }, { "status", no_argument, NULL, ARG_STATUS },
        { "strict", no_argument, NULL, ARG_STRICT }, { "warn", no_argument, NULL, 'w' },
        { "ignore-missing", no_argument, NULL, ARG_IGNORE_MISSING },
        { "progress", no_argument, NULL, ARG_PROGRESS }, { "no-progress", no_argument, NULL, ARG_NO_PROGRESS },
        { "help", no_argument, NULL, 'h' }, { "version", no_argument, NULL, ARG_VERSION },
        {}
};

int ctl_parse_args(int argc, char *argv[], Args *a)
{
        int c;

        a->algo = algo_from_string("sha256");
        a->algos = ALGO_SET_ONE(a->algo);
        a->progress = PROGRESS_AUTO;
        a->bus = FHASH_BUS_SYSTEM;

        /* getopt names the program by argv[0] in its messages ("/usr/bin/fhashctl: unrecognized
         * option"), and ours say "Try 'fhashctl --help'": one name for both. */
        if (argc > 0)
                argv[0] = (char *)ctl_program;
        while ((c = getopt_long(argc, argv, "a:rzwhcbtql:", options, NULL)) >= 0) {
                if (set_flag(a, c))
                        continue;
                switch (c) {
                case 'a': {
                        int k = algo_set_parse(optarg, &a->algos);

                        if (k == -E2BIG)
                                return bad_usage("-a: at most %d algorithms in one read, not '%s'", FHASH_ALGORITHMS_MAX,
                                                   optarg);
                        if (k == -ENOTUNIQ)
                                return bad_usage("-a: '%s' names an algorithm twice", optarg);
                        if (k < 0)
                                return bad_usage("unknown algorithm '%s' (valid: %s; several: -a %s)", optarg,
                                                   algo_list(), "sha256,blake3");
                        a->algo = a->algos.algos[0];
                        a->algo_set = true;
                        break;
                }
                case 'l':
                case ARG_DERIVE_KEY:
                        *(c == 'l' ? &a->length : &a->derive_key) = optarg;
                        break;
                case ARG_BLOCK_SIZE:
                        a->block_size = optarg;
                        break;
                case ARG_PROGRESS:
                case ARG_NO_PROGRESS:
                        a->progress = c == ARG_PROGRESS ? PROGRESS_ON : PROGRESS_OFF;
                        break;
                case ARG_EXCLUDE: {
                        char **n = reallocarray(a->excludes, a->n_excludes + 1, sizeof(char *));
                        if (!n) {
                                ctl_err("Out of memory.");
                                return -ENOMEM;
                        }
                        a->excludes = n;
                        a->excludes[a->n_excludes++] = optarg;
                        break;
                }
                case ARG_SYSTEM:
                case ARG_USER:
                case ARG_ADDRESS:
                        /* A typo would otherwise be "no bus there" and, without --daemon, a quiet
                         * in-process run that exits 0. */
                        if (c == ARG_ADDRESS && !fhash_bus_address_is_valid(optarg))
                                return bad_usage("--address: \"%s\" is not a D-Bus address (TRANSPORT:KEY=VALUE,..., "
                                                 "e.g. unix:path=/run/dbus/system_bus_socket)", optarg);
                        /* The last of --system, --user and --address counts. */
                        a->bus = c == ARG_SYSTEM ? FHASH_BUS_SYSTEM : c == ARG_USER ? FHASH_BUS_USER : FHASH_BUS_ADDRESS;
                        a->address = c == ARG_ADDRESS ? optarg : NULL;
                        break;
                case ARG_IO:
                        /* (getopt gives required arguments; clang-tidy 14 cannot tell after
                         * --attributes' optional one.) */
                        if (!optarg || (!streq(optarg, "auto") && !streq(optarg, "read") && !streq(optarg, "mmap") &&
                                        !streq(optarg, "direct")))
                                return bad_usage("--io: \"%s\" is not one of auto, read, mmap, direct", optarg);
                        a->io = optarg;
                        break;
                case ARG_PRIORITY:
                        if (priority_from_string(optarg, &a->priority) < 0)
                                return bad_usage("--priority: \"%s\" is not one of normal, interactive, background",
                                                 optarg);
                        break;
                case ARG_BACKGROUND:
                        a->priority = FHASH_PRIORITY_BACKGROUND;
                        break;
                case ARG_ATTRIBUTES: {
                        const char *bad = NULL;

                        if (!optarg)
                                a->attributes = BASELINE_ATTRS_ALL;
                        else if (baseline_attrs_parse_mask(optarg, &a->attributes, &bad) < 0)
                                return bad_usage("--attributes: \"%s\" is not one of mode, uid, gid, ino, mtime, ctime, "
                                                 "xattrs, all", bad);
                        break;
                }
                case ARG_VERSION:
                        printf("fhashctl %s\n", FHASH_VERSION);
                        return 0;
                default:
                        fprintf(stderr, "Try '%s --help' for more information.\n", ctl_program);
                        return -EINVAL;
                }
        }

        if (optind < argc)
                a->verb = argv[optind++];
        a->rest = argv + optind;
        a->n_rest = (size_t)(argc - optind);

        if (a->help) {
                if (!a->verb)
                        help_main(stdout);
                else
                        help_verb(a->verb);
                return 0;
        }
        if (!a->verb)
                return bad_usage("missing verb");
        /* sha256sum -c: "fhashctl hash -c SUMS" is "fhashctl check SUMS". */
        if (a->check && streq(a->verb, "hash"))
                a->verb = "check";
        if (a->check && !streq(a->verb, "check"))
                return bad_usage("-c/--check is for hash and check");
        if ((a->binary || a->no_names) && streq(a->verb, "check"))
                return bad_usage("check: --binary and --no-names are options of hash");
        if (a->no_names && (a->tag || a->json))
                return bad_usage("--no-names excludes --tag and --json");
        if (a->raw && (!streq(a->verb, "hash") || a->n_rest > 1 || a->recursive || a->tag || a->json || a->zero))
                return bad_usage("--raw writes the digest of one input (not -r, --tag, --json, -z)");
        if (a->local && a->daemon)
                return bad_usage("--local and --daemon exclude each other");
        if ((a->tag ? 1 : 0) + (a->json ? 1 : 0) > 1)
                return bad_usage("--tag and --json exclude each other");
        if (a->json && a->zero)
                return bad_usage("--zero and --json exclude each other");
        if ((a->update || a->create || a->journal || a->attributes) && !streq(a->verb, "audit"))
                return bad_usage("%s is an option of audit", a->update   ? "--update"
                                                             : a->create  ? "--create"
                                                             : a->journal ? "--journal"
                                                                          : "--attributes");
        if (a->priority != FHASH_PRIORITY_NORMAL && !streq(a->verb, "hash") && !streq(a->verb, "check") &&
            !streq(a->verb, "audit"))
                return bad_usage("--priority and --background are options of hash, check and audit");
        if (a->algos.n > 1) {
                if (!streq(a->verb, "hash"))
                        return bad_usage("%s: -a takes one algorithm (several in one read are for hash)", a->verb);
                /* One line per algorithm: only a tag says which line is which. */
                if (a->binary || a->no_names || a->raw)
                        return bad_usage("several algorithms are written as tagged lines, one per algorithm "
                                           "(not --binary, --no-names or --raw)");
                if (a->length || a->keyed || a->derive_key || a->block_size)
                        return bad_usage("--length, --keyed, --derive-key and --block-size take one algorithm");
        }
        if (a->length || a->keyed || a->derive_key || a->block_size)
                return parse_params(a);
        return 1;
}

/* A key of exactly FHASH_KEY_SIZE bytes on standard input, as b3sum --keyed reads it: 0, or -EIO
 * after saying why. */
static int read_key(uint8_t key[static FHASH_KEY_SIZE])
{
        uint8_t buf[FHASH_KEY_SIZE + 1];
        size_t n = 0;

        while (n < sizeof(buf)) {
                ssize_t k = read(STDIN_FILENO, buf + n, sizeof(buf) - n);

                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0) {
                        ctl_err("--keyed: cannot read the key from standard input: %m");
                        explicit_bzero(buf, sizeof(buf));
                        return -EIO;
                }
                if (k == 0)
                        break;
                n += (size_t)k;
        }
        if (n != FHASH_KEY_SIZE) {
                explicit_bzero(buf, sizeof(buf));
                ctl_err("--keyed: expected %d key bytes on standard input, found %s%zu", FHASH_KEY_SIZE,
                    n > FHASH_KEY_SIZE ? "more than " : "", MIN(n, (size_t)FHASH_KEY_SIZE));
                return -EIO;
        }
        memcpy(key, buf, FHASH_KEY_SIZE);
        explicit_bzero(buf, sizeof(buf));
        return 0;
}

/* Whether algo takes p, as libfhash would refuse it (fhash_hash_options), checked here so that the
 * error names the option: 0, -EOPNOTSUPP (an option algo does not take), -ERANGE (a length past its
 * longest), -EINVAL (a key and a context, which b3sum refuses too). */
static int params_check(const char *algo, const CtlParams *p)
{
        unsigned takes = fhash_algorithm_features(algo);

        if ((p->out_len && !(takes & FHASH_ALGORITHM_LENGTH)) || (p->keyed && !(takes & FHASH_ALGORITHM_KEY)) ||
            (p->context && !(takes & FHASH_ALGORITHM_DERIVE_KEY)) ||
            (p->block_size && !(takes & FHASH_ALGORITHM_BLOCK_SIZE)))
                return -EOPNOTSUPP;
        if (p->out_len && fhash_algorithm_digest_size(algo, p->out_len * 8) == 0)
                return -ERANGE;
        if (p->keyed && p->context)
                return -EINVAL;
        return 0;
}

/* --length, --keyed, --derive-key into a->params, checked against -a. Returns 1 to go on. */
static int parse_params(Args *a)
{
        CtlParams *p = &a->params;
        int r;

        bool check = streq(a->verb, "check");

        if (check && (a->keyed || a->derive_key || a->block_size))
                return bad_usage("check: --keyed, --derive-key and --block-size are options of hash (as b3sum "
                                 "--check takes neither key)");
        if (!streq(a->verb, "hash") && !check)
                return bad_usage("--length, --keyed, --derive-key and --block-size are options of hash (--length: "
                                 "and check)");
        if (a->length) {
                char *end = NULL;
                unsigned long bits;

                errno = 0;
                bits = strtoul(a->length, &end, 10);
                if (errno != 0 || !end || *end || end == a->length || a->length[0] == '-' || bits % 8 != 0 ||
                    bits > (unsigned long)FHASH_DIGEST_MAX * 8)
                        return bad_usage("--length: '%s' is not a number of bits that is a multiple of 8 "
                                           "(at most %d; b3sum's --length N bytes is --length %s)",
                                           a->length, FHASH_DIGEST_MAX * 8, "8N");
                p->out_len = (uint32_t)(bits / 8); /* 0: the default, as b2sum -l 0 */
        }
        if (a->block_size) {
                char *end = NULL;
                unsigned long bytes;

                errno = 0;
                bytes = strtoul(a->block_size, &end, 10);
                if (errno != 0 || !end || *end || end == a->block_size || a->block_size[0] == '-' ||
                    bytes < FHASH_BLOCK_SIZE_MIN || bytes > FHASH_BLOCK_SIZE_MAX || (bytes & (bytes - 1)) != 0)
                        return bad_usage("--block-size: '%s' is not a power of two from %u to %u bytes", a->block_size,
                                         FHASH_BLOCK_SIZE_MIN, FHASH_BLOCK_SIZE_MAX);
                p->block_size = (uint32_t)bytes;
        }
        if (a->derive_key)
                p->context = a->derive_key;
        p->keyed = a->keyed;
        /* check -l without -a: the lines' own algorithms, those that take a length held to it. */
        if (check && !a->algo_set)
                return 1;
        r = params_check(a->algo, p);
        if (r == -EOPNOTSUPP)
                return bad_usage("%s takes no %s (--length: blake2b, blake2s, blake3; --keyed, --derive-key: blake3; "
                                 "--block-size: fsverity, fsverity-sha512)",
                                   a->algo,
                                   p->out_len && !(fhash_algorithm_features(a->algo) & FHASH_ALGORITHM_LENGTH) ? "--length"
                                   : p->keyed && !(fhash_algorithm_features(a->algo) & FHASH_ALGORITHM_KEY) ? "--keyed"
                                   : p->block_size && !(fhash_algorithm_features(a->algo) & FHASH_ALGORITHM_BLOCK_SIZE)
                                           ? "--block-size"
                                   : p->context ? "--derive-key"
                                                : "--length");
        if (r == -ERANGE)
                return bad_usage("--length: %s digests are at most %zu bits", a->algo,
                                   fhash_algorithm_digest_max(a->algo) * 8);
        if (r < 0)
                return bad_usage("--keyed and --derive-key exclude each other");
        if (a->keyed) {
                for (size_t i = 0; i < a->n_rest; i++)
                        if (streq(a->rest[i], "-"))
                                return bad_usage("--keyed reads the key from standard input: it cannot be a file too");
                if (a->n_rest == 0)
                        return bad_usage("--keyed reads the key from standard input: name the files to hash");
                r = read_key(p->key);
                if (r < 0)
                        return r;
        }
        /* check takes each line's length from the manifest (ManifestEntry.out_len), not from here. */
        a->has_params = !check && (p->out_len != 0 || p->keyed || p->context || p->block_size);
        return 1;
}
