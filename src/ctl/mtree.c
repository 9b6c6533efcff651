/* SPDX-License-Identifier: MIT */
/* mtree.c: entries of mtree manifests (bsdtar --format=mtree, pacman's .MTREE); see mtree.h */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/macro.h"
#include "ctl/mtree.h"

/* The digests fhash checks, in the order it prefers them, with libarchive's short names. */
static const struct {
        const char *keyword;
        const char *alias;
        const char *algo;
} digest_keys[] = {
        { "sha256digest", "sha256", "sha256" }, { "sha512digest", "sha512", "sha512" },
        { "sha384digest", "sha384", "sha384" }, { "sha1digest", "sha1", "sha1" },
        { "md5digest", "md5", "md5" },
};
#define N_DIGESTS ELEMENTSOF(digest_keys)

/* Digests libarchive writes that fhash has no algorithm for (RIPEMD-160; POSIX cksum's CRC). */
static const char *const unsupported_keys[] = { "rmd160digest", "rmd160", "ripemd160digest", "cksum" };

static const char *const type_names[_MTREE_TYPE_MAX] = {
        [MTREE_FILE] = "file", [MTREE_DIR] = "dir",   [MTREE_LINK] = "link",     [MTREE_BLOCK] = "block",
        [MTREE_CHAR] = "char", [MTREE_FIFO] = "fifo", [MTREE_SOCKET] = "socket",
};

const char *mtree_type_to_string(MtreeType t)
{
        return t >= 0 && t < _MTREE_TYPE_MAX ? type_names[t] : NULL;
}

enum {
        HAS_TYPE = 1u << 0,
        HAS_SIZE = 1u << 1,
        HAS_MODE = 1u << 2,
        HAS_LINK = 1u << 3,
        HAS_OPTIONAL = 1u << 4,
        HAS_NOCHANGE = 1u << 5,
        HAS_UNSUPPORTED = 1u << 6,
        HAS_DIGEST = 1u << 7, /* ... one bit per digest_keys[] entry from here */
};

/* What /set gives every entry, or one entry says. */
typedef struct Attrs {
        unsigned has;
        MtreeType type;
        uint64_t size;
        unsigned mode;
        char *link;
        const char *unsupported;
        char digest[N_DIGESTS][ALGO_HEX_MAX];
} Attrs;

struct MtreeParser {
        Attrs set;
        char *cwd;    /* the classic form's directory, from the manifest's; NULL: the manifest's own */
};

int mtree_parser_new(MtreeParser **ret)
{
        MtreeParser *p = calloc(1, sizeof(*p));

        if (!p)
                return -ENOMEM;
        *ret = p;
        return 0;
}

MtreeParser *mtree_parser_free(MtreeParser *p)
{
        if (!p)
                return NULL;
        free(p->set.link);
        free(p->cwd);
        return mfree(p);
}

static bool starts_word(const char *s, size_t len, const char *w)
{
        size_t n = strlen(w);

        return len >= n && memcmp(s, w, n) == 0 && (len == n || s[n] == ' ' || s[n] == '\t');
}

bool mtree_detect(const char *line, size_t len)
{
        while (len > 0 && (*line == ' ' || *line == '\t'))
                line++, len--;
        return (len >= 6 && memcmp(line, "#mtree", 6) == 0) || starts_word(line, len, "/set") ||
               starts_word(line, len, "/unset");
}

bool mtree_detect_filename(const char *path)
{
        const char *base = path ? strrchr(path, '/') : NULL;
        size_t n;

        base = base ? base + 1 : path;
        if (!base)
                return false;
        n = strlen(base);
        return streq(base, ".MTREE") || streq(base, "mtree") || (n > 6 && streq(base + n - 6, ".mtree"));
}

/* Undoes libarchive's escapes (mtree.h) in s[0..n): a malloc'd string, or -EINVAL for a NUL in it. */
static int unescape(const char *s, size_t n, char **ret)
{
        /* Plain frees, not _cleanup_: clang-tidy 14's analyzer does not see through it. */
        char *out = malloc(n + 1);
        size_t k = 0;

        if (!out)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                char c = s[i];

                if (c == '\\' && i + 1 < n) {
                        const char *e = s + i + 1;
                        size_t left = n - i - 1;
                        static const char from[] = "abfnrstv\\", to[] = "\a\b\f\n\r \t\v\\";
                        const char *hit = strchr(from, *e);

                        if (left >= 3 && e[0] >= '0' && e[0] <= '3' && e[1] >= '0' && e[1] <= '7' && e[2] >= '0' &&
                            e[2] <= '7') {
                                c = (char)((e[0] - '0') << 6 | (e[1] - '0') << 3 | (e[2] - '0'));
                                i += 3;
                        } else if (*e == '0')
                                c = '\0'; /* libarchive's \0: a NUL, which no name holds */
                        else if (hit && *e) {
                                c = to[hit - from];
                                i++;
                        }
                }
                if (c == '\0') {
                        free(out);
                        return -EINVAL;
                }
                out[k++] = c;
        }
        out[k] = '\0';
        *ret = out;
        return 0;
}

static int parse_u64(const char *s, size_t n, unsigned base, uint64_t *ret)
{
        uint64_t v = 0;

        if (n == 0)
                return -EINVAL;
        for (size_t i = 0; i < n; i++) {
                unsigned d = (unsigned)(s[i] - '0');

                if (s[i] < '0' || d >= base || v > (UINT64_MAX - d) / base)
                        return -EINVAL;
                v = v * base + d;
        }
        *ret = v;
        return 0;
}

static bool word_eq(const char *s, size_t n, const char *w)
{
        return strlen(w) == n && memcmp(s, w, n) == 0;
}

/* One keyword (key=value, or a bare one) into a; unset: removes it (a bare key, or "all"). */
static int apply(Attrs *a, const char *key, size_t kn, const char *val, size_t vn, bool has_val, bool unset)
{
        int r;

        if (unset) {
                if (word_eq(key, kn, "all")) {
                        free(a->link);
                        *a = (Attrs){ 0 };
                        return 0;
                }
                for (size_t d = 0; d < N_DIGESTS; d++)
                        if (word_eq(key, kn, digest_keys[d].keyword) || word_eq(key, kn, digest_keys[d].alias))
                                a->has &= ~(HAS_DIGEST << d);
                if (word_eq(key, kn, "type"))
                        a->has &= ~HAS_TYPE;
                else if (word_eq(key, kn, "size"))
                        a->has &= ~HAS_SIZE;
                else if (word_eq(key, kn, "mode"))
                        a->has &= ~HAS_MODE;
                else if (word_eq(key, kn, "link")) {
                        a->has &= ~HAS_LINK;
                        a->link = mfree(a->link);
                } else if (word_eq(key, kn, "optional"))
                        a->has &= ~HAS_OPTIONAL;
                else if (word_eq(key, kn, "nochange"))
                        a->has &= ~HAS_NOCHANGE;
                return 0;
        }
        if (!has_val) {
                if (word_eq(key, kn, "optional"))
                        a->has |= HAS_OPTIONAL;
                else if (word_eq(key, kn, "nochange"))
                        a->has |= HAS_NOCHANGE;
                return 0; /* "ignore" and the rest: nothing to check */
        }
        for (size_t d = 0; d < N_DIGESTS; d++)
                if (word_eq(key, kn, digest_keys[d].keyword) || word_eq(key, kn, digest_keys[d].alias)) {
                        size_t want = 2 * algo_digest_size(digest_keys[d].algo);

                        if (vn != want)
                                return -EINVAL;
                        for (size_t i = 0; i < vn; i++) {
                                if (!isxdigit((unsigned char)val[i]))
                                        return -EINVAL;
                                a->digest[d][i] = (char)tolower((unsigned char)val[i]);
                        }
                        a->digest[d][vn] = '\0';
                        a->has |= HAS_DIGEST << d;
                        return 0;
                }
        for (size_t u = 0; u < ELEMENTSOF(unsupported_keys); u++)
                if (word_eq(key, kn, unsupported_keys[u])) {
                        a->unsupported = unsupported_keys[u];
                        a->has |= HAS_UNSUPPORTED;
                        return 0;
                }
        if (word_eq(key, kn, "type")) {
                for (MtreeType t = 0; t < _MTREE_TYPE_MAX; t++)
                        if (word_eq(val, vn, type_names[t])) {
                                a->type = t;
                                a->has |= HAS_TYPE;
                                return 0;
                        }
                return -EINVAL;
        }
        if (word_eq(key, kn, "size")) {
                r = parse_u64(val, vn, 10, &a->size);
                if (r >= 0)
                        a->has |= HAS_SIZE;
                return r;
        }
        if (word_eq(key, kn, "mode")) {
                uint64_t m;

                /* A symbolic mode (mtree(5) allows one; libarchive writes octal): not checked. */
                if (parse_u64(val, vn, 8, &m) >= 0 && m <= 07777) {
                        a->mode = (unsigned)m;
                        a->has |= HAS_MODE;
                } else
                        a->has &= ~HAS_MODE;
                return 0;
        }
        if (word_eq(key, kn, "link")) {
                char *l;

                r = unescape(val, vn, &l);
                if (r < 0)
                        return r;
                free(a->link);
                a->link = l;
                a->has |= HAS_LINK;
                return 0;
        }
        return 0; /* uid, time, flags, ...: mtree.h says why they are not checked */
}

/* The next blank-separated word of s[*i..n): its start and length, or false at the end. */
static bool next_word(const char *s, size_t n, size_t *i, const char **ret, size_t *ret_len)
{
        size_t b = *i, e;

        while (b < n && (s[b] == ' ' || s[b] == '\t'))
                b++;
        if (b >= n)
                return false;
        for (e = b; e < n && s[e] != ' ' && s[e] != '\t'; e++)
                ;
        *ret = s + b;
        *ret_len = e - b;
        *i = e;
        return true;
}

/* The keywords after the name (or after /set, /unset) into a. */
static int apply_words(Attrs *a, const char *s, size_t n, size_t i, bool unset)
{
        const char *w;
        size_t wn;

        while (next_word(s, n, &i, &w, &wn)) {
                const char *eq = memchr(w, '=', wn);
                int r = eq ? apply(a, w, (size_t)(eq - w), eq + 1, wn - (size_t)(eq - w) - 1, true, unset)
                           : apply(a, w, wn, NULL, 0, false, unset);

                if (r < 0)
                        return r;
        }
        return 0;
}

static int attrs_copy(const Attrs *from, Attrs *to)
{
        *to = *from;
        if (from->link) {
                to->link = strdup(from->link);
                if (!to->link)
                        return -ENOMEM;
        }
        return 0;
}

/* ".." of the classic form: the directory above. */
static int cwd_up(MtreeParser *p)
{
        char *slash;

        if (!p->cwd)
                return -EINVAL; /* above the manifest's own directory */
        slash = strrchr(p->cwd, '/');
        if (slash)
                *slash = '\0';
        else
                p->cwd = mfree(p->cwd);
        return 0;
}

int mtree_parse_line(MtreeParser *p, const char *line, size_t len, const char *want, char **ret_name,
                     const char **ret_algo, char ret_hex[static ALGO_HEX_MAX], MtreeInfo *ret_info)
{
        char *name = NULL, *path;
        Attrs a;
        const char *w;
        size_t i = 0, wn;
        const char *algo = NULL;
        bool classic;
        int r;

        if (!p || (!line && len > 0))
                return -EINVAL;
        if (!next_word(line, len, &i, &w, &wn) || w[0] == '#')
                return 0;
        if (w[0] == '/') {
                if (word_eq(w, wn, "/set"))
                        return apply_words(&p->set, line, len, i, false);
                if (word_eq(w, wn, "/unset"))
                        return apply_words(&p->set, line, len, i, true);
                return -EINVAL;
        }
        if (word_eq(w, wn, "..")) {
                size_t j = i;
                const char *more;
                size_t mn;

                return next_word(line, len, &j, &more, &mn) ? -EINVAL : cwd_up(p);
        }
        r = attrs_copy(&p->set, &a);
        if (r < 0)
                return r;
        r = apply_words(&a, line, len, i, false);
        if (r >= 0)
                r = unescape(w, wn, &name);
        if (r < 0) {
                free(a.link);
                return r;
        }
        if (!(a.has & HAS_TYPE))
                a.type = MTREE_FILE;
        /* A name with a '/' is a path from the manifest's directory; one without is the classic
         * form's, in the directory entered last (a directory entry of that form enters it). */
        classic = !memchr(w, '/', wn);
        if (classic && p->cwd) {
                size_t lc = strlen(p->cwd), ln = strlen(name);

                path = malloc(lc + 1 + ln + 1);
                if (path) {
                        memcpy(path, p->cwd, lc);
                        path[lc] = '/';
                        memcpy(path + lc + 1, name, ln + 1);
                }
                free(name);
        } else
                path = name;
        if (path && classic && a.type == MTREE_DIR) {
                char *c = strdup(path);

                if (c) {
                        free(p->cwd);
                        p->cwd = c;
                } else {
                        free(path);
                        path = NULL;
                }
        }
        if (!path) {
                free(a.link);
                return -ENOMEM;
        }

        ret_hex[0] = '\0';
        for (size_t d = 0; d < N_DIGESTS && a.type == MTREE_FILE; d++)
                if ((a.has & (HAS_DIGEST << d)) && (!want || algo_is(want, digest_keys[d].algo))) {
                        algo = algo_from_string(digest_keys[d].algo);
                        strcpy(ret_hex, a.digest[d]);
                        break;
                }
        *ret_info = (MtreeInfo){
                .type = a.type,
                .has_size = a.has & HAS_SIZE,
                .has_mode = a.has & HAS_MODE,
                .optional = a.has & HAS_OPTIONAL,
                .nochange = a.has & HAS_NOCHANGE,
                .size = a.size,
                .mode = a.mode,
                .link = a.type == MTREE_LINK ? a.link : NULL,
                .unsupported = !algo && (a.has & HAS_UNSUPPORTED) ? a.unsupported : NULL,
        };
        if (a.type != MTREE_LINK)
                free(a.link);
        *ret_algo = algo;
        *ret_name = path;
        return 1;
}
