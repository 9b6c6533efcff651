/* SPDX-License-Identifier: MIT */
/* config.c: fhashd's settings: one table of keys for the file, the command line and the defaults */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "basic/time-util.h"
#include "daemon/config.h"
#include "fhash/fhash-dbus.h"
#include "basic/macro.h"

#define KEY(id, n, t, field, def, lo, hi, opt, arg, text)                                                  \
        [id] = { .name = n, .type = t, .offset = offsetof(FhashConfig, field), .default_value = def,       \
                 .min = lo, .max = hi, .option = opt, .metavar = arg, .help = text }

/* Ranges keep a typo from starving or exhausting the machine; the engine's are its own limits
 * (engine.h), so whatever the file accepts, engine_new() accepts too. The defaults are written as in
 * fhashd.conf, and parsed like any value. */
static const ConfigKey config_keys[_CONFIG_KEY_MAX] = {
        KEY(CONFIG_WORKERS, "Workers", CONFIG_TYPE_UNSIGNED, workers, "0", 0, ENGINE_MAX_WORKERS,
            "workers", "N", "Hashing threads (0 = one per CPU)"),
        KEY(CONFIG_BUFFER_SIZE, "BufferSize", CONFIG_TYPE_SIZE, buffer_size, "1M", 4096, ENGINE_MAX_BUFFER_SIZE,
            "buffer-size", "BYTES", "Bytes per buffer (K, M, G suffixes)"),
        KEY(CONFIG_BUFFERS, "Buffers", CONFIG_TYPE_UNSIGNED, buffers, "0", 0, ENGINE_MAX_BUFFERS,
            "buffers", "N", "Buffers in the pool (0 = automatic)"),
        KEY(CONFIG_MAX_OPEN_FILES, "MaxOpenFiles", CONFIG_TYPE_UNSIGNED, max_open_files, "64", 1, ENGINE_MAX_OPEN,
            NULL, NULL, NULL),
        KEY(CONFIG_IDLE_EXIT_SEC, "IdleExitSec", CONFIG_TYPE_UNSIGNED, idle_exit_sec, "30", 0, UINT_MAX,
            "idle-exit", "SECONDS", "Exit after this long without jobs or clients (0 = never)"),
        KEY(CONFIG_KEEP_FINISHED_SEC, "KeepFinishedSec", CONFIG_TYPE_UNSIGNED, keep_finished_sec, "60", 0, UINT_MAX,
            "keep-finished", "SECONDS", "Keep finished jobs on the bus this long"),
        KEY(CONFIG_MAX_PATHS_PER_CALL, "MaxPathsPerCall", CONFIG_TYPE_UNSIGNED, max_paths_per_call, "100000", 1, 10000000,
            "max-paths", "N", "Paths per HashPaths call"),
        KEY(CONFIG_MAX_JOBS_PER_UID, "MaxJobsPerUID", CONFIG_TYPE_UNSIGNED, max_jobs_per_uid, "64", 0, UINT_MAX,
            "max-jobs-per-uid", "N", "Unfinished jobs per uid (0 = unlimited)"),
        KEY(CONFIG_MAX_QUEUED_FILES_PER_UID, "MaxQueuedFilesPerUID", CONFIG_TYPE_UNSIGNED, max_queued_files_per_uid,
            "1000000", 0, UINT_MAX, "max-files-per-uid", "N", "Unfinished files per uid (0 = unlimited)"),
        KEY(CONFIG_MAX_MEMORY_PER_UID, "MaxMemoryPerUID", CONFIG_TYPE_SIZE, max_memory_per_uid, "256M", 0,
            UINT64_MAX, "max-memory-per-uid", "BYTES", "Memory the jobs of one uid may hold (0 = unlimited)"),
        KEY(CONFIG_MAX_FILE_SIZE, "MaxFileSize", CONFIG_TYPE_SIZE, max_file_size, "0", 0, UINT64_MAX, NULL, NULL, NULL),
        KEY(CONFIG_STALL_TIMEOUT_SEC, "StallTimeoutSec", CONFIG_TYPE_UNSIGNED, stall_timeout_sec, "30", 0, UINT_MAX,
            "stall-timeout", "SECONDS", "End a file whose reads make no progress this long (0 = never)"),
        KEY(CONFIG_IO_MODE, "IOMode", CONFIG_TYPE_IO_MODE, io_mode, "auto", 0, 0,
            "io-mode", "MODE", "auto, uring-registered, uring or pread"),
};

const ConfigKey *config_key(ConfigKeyId id)
{
        if ((int)id < 0 || id >= _CONFIG_KEY_MAX)
                return NULL;
        return &config_keys[id];
}

static int config_key_parse(const ConfigKey *k, const char *value, FhashConfig *c, const char **ret_reason);

FhashConfig config_defaults(void)
{
        FhashConfig c = {};

        for (size_t i = 0; i < ELEMENTSOF(config_keys); i++) {
                const char *reason = NULL;

                /* The table's own values always parse (test-config checks each). */
                if (config_key_parse(&config_keys[i], config_keys[i].default_value, &c, &reason) < 0)
                        abort();
        }
        return c;
}

void config_init_defaults(FhashConfig *c)
{
        *c = config_defaults();
}

static const ConfigKey *config_key_find(const char *name)
{
        for (size_t i = 0; i < ELEMENTSOF(config_keys); i++)
                if (streq(config_keys[i].name, name))
                        return &config_keys[i];
        return NULL;
}

/* Sets *ret_error (if wanted) to a formatted message; returns r so callers can "return error(...)". */
_printf_(3, 4) static int set_error(char **ret_error, int r, const char *fmt, ...)
{
        va_list ap;
        char *s;

        if (!ret_error)
                return r;
        va_start(ap, fmt);
        if (vasprintf(&s, fmt, ap) < 0)
                s = NULL;
        va_end(ap);
        if (!s)
                return -ENOMEM;
        *ret_error = s;
        return r;
}

/* Decimal digits only: no sign, no blanks, no hex, no octal surprises. -ERANGE on overflow. */
static int parse_u64(const char *s, uint64_t *ret, const char **ret_end)
{
        uint64_t v = 0;
        const char *p = s;

        if (*p < '0' || *p > '9')
                return -EINVAL;
        for (; *p >= '0' && *p <= '9'; p++) {
                unsigned d = (unsigned)(*p - '0');
                if (v > (UINT64_MAX - d) / 10)
                        return -ERANGE;
                v = v * 10 + d;
        }
        *ret = v;
        *ret_end = p;
        return 0;
}

static int parse_size(const char *s, uint64_t *ret)
{
        const char *end;
        uint64_t v;
        unsigned shift = 0;
        int r;

        r = parse_u64(s, &v, &end);
        if (r < 0)
                return r;
        switch (*end) {
        case '\0':
                break;
        case 'k':
        case 'K':
                shift = 10;
                break;
        case 'm':
        case 'M':
                shift = 20;
                break;
        case 'g':
        case 'G':
                shift = 30;
                break;
        case 't':
        case 'T':
                shift = 40;
                break;
        default:
                return -EINVAL;
        }
        if (shift > 0 && end[1] != '\0')
                return -EINVAL;
        if (shift > 0 && v > (UINT64_MAX >> shift))
                return -ERANGE;
        *ret = v << shift;
        return 0;
}

/* Parses value for key into the field of c, or returns -EINVAL/-ERANGE with *ret_reason set to a
 * static string (or, for ranges, NULL so the caller prints the range). */
static int config_key_parse(const ConfigKey *k, const char *value, FhashConfig *c, const char **ret_reason)
{
        uint8_t *field = (uint8_t *)c + k->offset;
        const char *end;
        uint64_t v;
        int r;

        /* Empty: back to the built-in default, which is written like any value. */
        if (*value == '\0')
                value = k->default_value;

        switch (k->type) {
        case CONFIG_TYPE_UNSIGNED:
                r = parse_u64(value, &v, &end);
                if (r == 0 && *end != '\0')
                        r = -EINVAL;
                if (r == -EINVAL) {
                        *ret_reason = "invalid number";
                        return r;
                }
                if (r < 0 || v < k->min || v > k->max) {
                        *ret_reason = NULL;
                        return -ERANGE;
                }
                {
                        unsigned u = (unsigned)v;
                        memcpy(field, &u, sizeof(u));
                }
                return 0;

        case CONFIG_TYPE_SIZE:
                r = parse_size(value, &v);
                if (r == -EINVAL) {
                        *ret_reason = "invalid size";
                        return r;
                }
                if (r < 0 || v < k->min || v > k->max) {
                        *ret_reason = NULL;
                        return -ERANGE;
                }
                memcpy(field, &v, sizeof(v));
                return 0;

        case CONFIG_TYPE_IO_MODE: {
                IoMode m = io_mode_from_string(value);
                if (m < 0) {
                        *ret_reason = "invalid I/O mode (auto, uring-registered, uring, pread)";
                        return -EINVAL;
                }
                memcpy(field, &m, sizeof(m));
                return 0;
        }
        }
        *ret_reason = "internal error";
        return -EINVAL;
}

/* "<prefix><Key>=<Value>: <reason>", with the range spelled out for -ERANGE. */
static int key_error(char **ret_error, const char *prefix, const ConfigKey *k, const char *value,
                     const char *reason)
{
        if (reason)
                return set_error(ret_error, -EINVAL, "%s%s=%s: %s", prefix, k->name, value, reason);
        return set_error(ret_error, -EINVAL, "%s%s=%s: out of range (%" PRIu64 "..%" PRIu64 ")", prefix,
                         k->name, value, k->min, k->max);
}

int config_set(FhashConfig *c, const char *key, const char *value, char **ret_error)
{
        const ConfigKey *k;
        FhashConfig tmp = *c;
        const char *reason = NULL;
        int r;

        k = config_key_find(key);
        if (!k)
                return set_error(ret_error, -ENOENT, "%s=%s: unknown key", key, value);
        r = config_key_parse(k, value, &tmp, &reason);
        if (r < 0)
                return key_error(ret_error, "", k, value, reason);
        *c = tmp;
        return 0;
}

static char *strip(char *s)
{
        char *e;

        s += strspn(s, " \t\r\n");
        e = s + strlen(s);
        while (e > s && strchr(" \t\r\n", e[-1]))
                e--;
        *e = '\0';
        return s;
}

static void fclosep(FILE **f)
{
        if (*f)
                fclose(*f);
}

int config_load_file(FhashConfig *c, const char *path, char **ret_error)
{
        _cleanup_(fclosep) FILE *f = NULL;
        _cleanup_free_ char *buf = NULL;
        FhashConfig tmp = *c;
        size_t bufsize = 0;
        unsigned line = 0;
        bool in_daemon = false;
        ssize_t n;

        f = fopen(path, "re");
        if (!f) {
                if (errno == ENOENT)
                        return 0;
                int r = negative_errno();
                return set_error(ret_error, r, "%s: %s", path, strerror(-r));
        }

        errno = 0;
        while ((n = getline(&buf, &bufsize, f)) >= 0) {
                const ConfigKey *k;
                const char *reason = NULL;
                char *s, *eq, *key, *value;
                int r;

                line++;
                if (memchr(buf, '\0', (size_t)n))
                        return set_error(ret_error, -EINVAL, "%s:%u: line contains a NUL byte", path, line);
                s = strip(buf);
                if (*s == '\0' || *s == '#' || *s == ';')
                        continue;

                if (*s == '[') {
                        size_t len = strlen(s);
                        if (s[len - 1] != ']')
                                return set_error(ret_error, -EINVAL, "%s:%u: %s: malformed section header",
                                                 path, line, s);
                        s[len - 1] = '\0';
                        if (!streq(strip(s + 1), "Daemon"))
                                return set_error(ret_error, -EINVAL, "%s:%u: [%s]: unknown section", path,
                                                 line, strip(s + 1));
                        in_daemon = true;
                        continue;
                }

                /* s is stripped, so a key is never empty unless the line starts with '='. */
                eq = strchr(s, '=');
                if (!eq || eq == s)
                        return set_error(ret_error, -EINVAL, "%s:%u: %s: not a Key=Value line", path, line, s);
                *eq = '\0';
                key = strip(s);
                value = strip(eq + 1);
                if (!in_daemon)
                        return set_error(ret_error, -EINVAL, "%s:%u: %s=%s: key outside the [Daemon] section",
                                         path, line, key, value);
                k = config_key_find(key);
                if (!k)
                        return set_error(ret_error, -EINVAL, "%s:%u: %s=%s: unknown key", path, line, key,
                                         value);
                r = config_key_parse(k, value, &tmp, &reason);
                if (r < 0) {
                        _cleanup_free_ char *prefix = NULL;

                        if (asprintf(&prefix, "%s:%u: ", path, line) < 0) {
                                prefix = NULL; /* undefined after a failure */
                                return -ENOMEM;
                        }
                        return key_error(ret_error, prefix, k, value, reason);
                }
                errno = 0;
        }
        if (ferror(f) || (errno != 0 && errno != ENOENT)) {
                int r = errno > 0 ? -errno : -EIO;
                return set_error(ret_error, r, "%s: %s", path, strerror(-r));
        }

        *c = tmp;
        return 1;
}

static int name_cmp(const struct dirent **a, const struct dirent **b)
{
        return strcmp((*a)->d_name, (*b)->d_name);
}

static int is_conf_name(const struct dirent *de)
{
        size_t len = strlen(de->d_name);

        return de->d_name[0] != '.' && len > strlen(".conf") && streq(de->d_name + len - strlen(".conf"), ".conf");
}

int config_load(FhashConfig *c, const char *main_path, const char *dropin_dir, char **ret_error)
{
        struct dirent **list = NULL;
        FhashConfig tmp = *c;
        int n = 0, loaded = 0, r = 0;

        if (main_path) {
                r = config_load_file(&tmp, main_path, ret_error);
                if (r < 0)
                        return r;
                loaded += r;
        }

        if (dropin_dir) {
                n = scandir(dropin_dir, &list, is_conf_name, name_cmp);
                if (n < 0) {
                        if (errno == ENOENT)
                                n = 0;
                        else {
                                r = negative_errno();
                                return set_error(ret_error, r, "%s: %s", dropin_dir, strerror(-r));
                        }
                }
        }

        r = 0;
        for (int i = 0; i < n; i++) {
                _cleanup_free_ char *p = NULL;
                struct stat st;

                if (r >= 0) {
                        if (asprintf(&p, "%s/%s", dropin_dir, list[i]->d_name) < 0) {
                                p = NULL;
                                r = -ENOMEM;
                        } else if (stat(p, &st) < 0) {
                                /* A dangling symlink is as good as a missing file. */
                                if (errno != ENOENT) {
                                        r = negative_errno();
                                        r = set_error(ret_error, r, "%s: %s", p, strerror(-r));
                                }
                        } else if (S_ISREG(st.st_mode)) {
                                r = config_load_file(&tmp, p, ret_error);
                                if (r > 0)
                                        loaded += r;
                        }
                }
                free(list[i]);
        }
        free(list);
        if (r < 0)
                return r;

        *c = tmp;
        return loaded;
}

void config_to_engine_config(const FhashConfig *c, EngineConfig *ret)
{
        *ret = (EngineConfig){
                .workers = c->workers,
                .buffer_size = (size_t)c->buffer_size,
                .buffers = c->buffers,
                .max_open = c->max_open_files,
                .io_mode = c->io_mode,
                /* A silent pipe or a hung file system would otherwise hold its slot for good. */
                .stall_timeout_usec = c->stall_timeout_sec ? (uint64_t)c->stall_timeout_sec * USEC_PER_SEC : UINT64_MAX,
        };
}

void config_fd_limits(uint64_t nofile, unsigned max_open, UserLimit ret[_USER_RESOURCE_MAX])
{
        /* Kept for fhashd itself, never given to a caller: the bus socket and its gate's pair, the
         * driver connection, five per direct connection (the client's socket and the gate's dup of it,
         * the pair to sd-bus, the gate's dup of sd-bus's end; as many connections as the limit allows
         * or a 64th of the fds), the engine's opens by path, rings, pipes, the closer's, and room to
         * receive two messages' fds (SCM_MAX_FD each) when every budget is spent, so that no read of a
         * socket of ours ever finds the table full. */
        uint64_t own = 64 + 5 * MIN((uint64_t)PEERS_MAX, nofile / 64) + max_open + 2 * (uint64_t)FDS_PER_MESSAGE_MAX;
        uint64_t headroom = MAX(nofile / 16, own);
        uint64_t rest = nofile > 2 * headroom ? nofile - headroom : nofile / 2;
        uint64_t transit = MAX(rest / 8, (uint64_t)TRANSIT_MIN), closing = MAX(rest / 8, 2 * (uint64_t)CLOSING_MIN_PER_UID);
        uint64_t inputs = rest > transit + closing ? rest - transit - closing : rest / 4;

        /* Inputs: a quarter each, an eighth root's alone. */
        ret[USER_RESOURCE_FDS] = (UserLimit){ .per_uid = inputs / 4, .total = inputs, .reserve = inputs / 8 };
        /* On their way in: a gate reads a socket with room for what the uid may still take. */
        ret[USER_RESOURCE_TRANSIT] = (UserLimit){ .per_uid = MAX(transit / 4, (uint64_t)FHASH_MAX_FDS_PER_CALL),
                                                   .total = transit, .reserve = transit / 8 };
        /* Waiting for the closer: what a silent FUSE server can make a user cost fhashd. */
        ret[USER_RESOURCE_CLOSING] = (UserLimit){ .per_uid = MAX(closing / 8, (uint64_t)CLOSING_MIN_PER_UID),
                                                   .total = closing, .reserve = closing / 8 };
}

void config_to_user_limits(const FhashConfig *c, UserLimit ret[_USER_RESOURCE_MAX])
{
        struct rlimit rl;

        ret[USER_RESOURCE_JOBS] = (UserLimit){ .per_uid = c->max_jobs_per_uid };
        ret[USER_RESOURCE_FILES] = (UserLimit){ .per_uid = c->max_queued_files_per_uid };
        ret[USER_RESOURCE_OWNERS] = (UserLimit){ .per_uid = OWNERS_MAX_PER_UID, .total = OWNERS_MAX,
                                                  .reserve = OWNERS_RESERVE_ROOT };
        ret[USER_RESOURCE_PEERS] = (UserLimit){ .per_uid = PEERS_MAX_PER_UID, .total = PEERS_MAX,
                                                 .reserve = PEERS_RESERVE_ROOT };
        ret[USER_RESOURCE_MEMORY] = (UserLimit){ .per_uid = c->max_memory_per_uid,
                                                  .total = 4 * c->max_memory_per_uid,
                                                  .reserve = c->max_memory_per_uid };
        config_fd_limits(getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY ? (uint64_t)rl.rlim_cur
                                                                                             : 1024,
                         /* The background engine, once made, opens as many again. */
                         2 * c->max_open_files, ret);
}
