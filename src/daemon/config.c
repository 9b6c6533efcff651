/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "daemon/config.h"
#include "basic/macro.h"

typedef enum ConfigType {
        CONFIG_UNSIGNED, /* unsigned, decimal digits only */
        CONFIG_SIZE,     /* uint64_t, digits and an optional K/M/G/T suffix */
        CONFIG_IO_MODE,  /* IoMode */
} ConfigType;

typedef struct ConfigKey {
        const char *name;
        ConfigType type;
        size_t offset;
        uint64_t min, max;
} ConfigKey;

#define KEY(n, t, field, lo, hi) { n, t, offsetof(FhashConfig, field), lo, hi }

/* Ranges keep a typo from starving or exhausting the machine; the engine's are its own limits
 * (engine.h), so whatever the file accepts, engine_new() accepts too. */
static const ConfigKey config_keys[] = {
        KEY("Workers", CONFIG_UNSIGNED, workers, 0, ENGINE_MAX_WORKERS),
        KEY("BufferSize", CONFIG_SIZE, buffer_size, 4096, ENGINE_MAX_BUFFER_SIZE),
        KEY("Buffers", CONFIG_UNSIGNED, buffers, 0, ENGINE_MAX_BUFFERS),
        KEY("MaxOpenFiles", CONFIG_UNSIGNED, max_open_files, 1, ENGINE_MAX_OPEN),
        KEY("IdleExitSec", CONFIG_UNSIGNED, idle_exit_sec, 0, UINT_MAX),
        KEY("KeepFinishedSec", CONFIG_UNSIGNED, keep_finished_sec, 0, UINT_MAX),
        KEY("MaxPathsPerCall", CONFIG_UNSIGNED, max_paths_per_call, 1, 10000000),
        KEY("MaxJobsPerUID", CONFIG_UNSIGNED, max_jobs_per_uid, 0, UINT_MAX),
        KEY("MaxQueuedFilesPerUID", CONFIG_UNSIGNED, max_queued_files_per_uid, 0, UINT_MAX),
        KEY("MaxBytesInFlightPerUID", CONFIG_SIZE, max_bytes_in_flight_per_uid, 0, UINT64_MAX),
        KEY("MaxFileSize", CONFIG_SIZE, max_file_size, 0, UINT64_MAX),
        KEY("IOMode", CONFIG_IO_MODE, io_mode, 0, 0),
};

void config_init_defaults(FhashConfig *c)
{
        *c = FHASH_CONFIG_DEFAULTS;
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
        const FhashConfig defaults = FHASH_CONFIG_DEFAULTS;
        uint8_t *field = (uint8_t *)c + k->offset;
        const uint8_t *def = (const uint8_t *)&defaults + k->offset;
        const char *end;
        uint64_t v;
        int r;

        if (*value == '\0') {
                /* Empty: back to the built-in default. */
                switch (k->type) {
                case CONFIG_UNSIGNED:
                        memcpy(field, def, sizeof(unsigned));
                        break;
                case CONFIG_SIZE:
                        memcpy(field, def, sizeof(uint64_t));
                        break;
                case CONFIG_IO_MODE:
                        memcpy(field, def, sizeof(IoMode));
                        break;
                }
                return 0;
        }

        switch (k->type) {
        case CONFIG_UNSIGNED:
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

        case CONFIG_SIZE:
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

        case CONFIG_IO_MODE: {
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
        };
}
