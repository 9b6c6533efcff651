/* SPDX-License-Identifier: MIT */
/* feed.c: a run's inputs from the caller's source to a backend, and their results back in order */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/macro.h"
#include "client/feed.h"
#include "protocol/errors.h"

/* An input's strings live in its slot when they fit: the slots are reused as the ring turns, so a
 * run of short names allocates nothing per file. */
#define SLOT_STRINGS 96

typedef struct Slot {
        Input in;
        char *heap;                     /* the strings when they do not fit in text[] */
        char text[SLOT_STRINGS];
        size_t name_off, path_off, expected_off;  /* where each string starts in heap or text */
        bool has_path, has_expected;
        bool answered;                  /* its result is in: delivered, or waiting for its turn */
        bool delivered;                 /* unordered: handed over already */
        uint8_t flags;                  /* the backend's (feed_flags()) */
        int kept_fd;                    /* feed_keep_fd()'s, until feed_open() hands it on */
        const char *skip;               /* a skip reason, interned in Feed.notes */
        /* A result that came before its turn, kept until then. */
        fhash_status status;
        int error;
        uint64_t size;
        char *message;
        char *hex_long;                 /* a set's digests */
        char hex[HASH_DIGEST_MAX * 2 + 1];
} Slot;

struct Feed {
        fhash_source_fn next_fn;
        void *source_userdata;
        const RunOptions *options;
        fhash_result_fn fn;
        void *userdata;
        Slot *slots;       /* ring: input i is slots[i & (alloc - 1)], for next <= i < n_items */
        size_t alloc;      /* a power of two */
        size_t next;       /* first input not delivered yet */
        size_t n_items;    /* inputs pulled so far */
        size_t n_answered; /* inputs with their result in */
        bool source_done;
        bool cancelled;
        char **notes;      /* skip reasons given by the source, kept for the run (few distinct) */
        size_t n_notes;
};

int feed_new(fhash_source_fn next, void *source_userdata, const RunOptions *o, fhash_result_fn fn, void *userdata,
             Feed **ret)
{
        Feed *f = calloc(1, sizeof(*f));

        if (!f)
                return -ENOMEM;
        *f = (Feed){ .next_fn = next, .source_userdata = source_userdata, .options = o, .fn = fn,
                     .userdata = userdata, .alloc = 64 };
        f->slots = calloc(f->alloc, sizeof(*f->slots));
        if (!f->slots) {
                free(f);
                return -ENOMEM;
        }
        *ret = f;
        return 0;
}

static Slot *slot_of(const Feed *f, size_t index)
{
        if (index < f->next || index >= f->n_items)
                return NULL;
        return &f->slots[index & (f->alloc - 1)];
}

static void slot_clear(Slot *s)
{
        s->kept_fd = safe_close(s->kept_fd);
        free(s->heap);
        free(s->message);
        free(s->hex_long);
        s->heap = s->message = s->hex_long = NULL;
}

/* Points the input's strings at the slot's copy (after it was filled, or moved by grow()). */
static void slot_point(Slot *s)
{
        const char *base = s->heap ? s->heap : s->text;

        s->in.name = base + s->name_off;
        s->in.path = s->has_path ? base + s->path_off : NULL;
        s->in.expected = s->has_expected ? base + s->expected_off : NULL;
}

Feed *feed_free(Feed *f)
{
        if (!f)
                return NULL;
        for (size_t i = f->next; i < f->n_items; i++)
                slot_clear(slot_of(f, i));
        free(f->slots);
        for (size_t i = 0; i < f->n_notes; i++)
                free(f->notes[i]);
        free(f->notes);
        return mfree(f);
}

/* Makes room for one more input: the ring doubles, and each live input whose place depends on the new
 * bit of its index moves to the new upper half (which holds nothing live, so nothing is overwritten). */
static int grow(Feed *f)
{
        size_t oa = f->alloc, na = oa * 2;
        Slot *ns;

        if (f->n_items - f->next < oa)
                return 0;
        ns = reallocarray(f->slots, na, sizeof(*ns));
        if (!ns)
                return -ENOMEM;
        f->slots = ns;
        f->alloc = na;
        for (size_t i = f->next; i < f->n_items; i++) {
                if (i & oa)
                        f->slots[i & (na - 1)] = f->slots[i & (oa - 1)];
                /* Every slot moved with the realloc: strings kept in it are elsewhere now. */
                slot_point(&f->slots[i & (na - 1)]);
        }
        return 0;
}

/* A source's skip reason, kept for the run: inputs only point at theirs. */
static const char *intern_note(Feed *f, const char *s)
{
        char **nn;

        for (size_t i = 0; i < f->n_notes; i++)
                if (streq(f->notes[i], s))
                        return f->notes[i];
        nn = reallocarray(f->notes, f->n_notes + 1, sizeof(char *));
        if (!nn)
                return NULL;
        f->notes = nn;
        f->notes[f->n_notes] = strdup(s);
        return f->notes[f->n_notes] ? f->notes[f->n_notes++] : NULL;
}

/* Copies the input's strings into its slot (or one allocation beside it). */
static int slot_copy(Slot *s, const char *name, const char *path, const char *expected)
{
        size_t ln = strlen(name) + 1;
        bool same = !path || path == name || streq(path, name);
        size_t lp = same ? 0 : strlen(path) + 1;
        size_t le = expected ? strlen(expected) + 1 : 0;
        char *base = s->text;

        if (ln + lp + le > SLOT_STRINGS) {
                s->heap = malloc(ln + lp + le);
                if (!s->heap)
                        return -ENOMEM;
                base = s->heap;
        }
        s->name_off = 0;
        s->path_off = same ? 0 : ln;
        s->expected_off = ln + lp;
        memcpy(base, name, ln);
        if (lp)
                memcpy(base + s->path_off, path, lp);
        if (le)
                memcpy(base + s->expected_off, expected, le);
        s->has_path = path != NULL;
        s->has_expected = expected != NULL;
        slot_point(s);
        return 0;
}

/* The error an input is given in place of its result, or 0 when it can be hashed: what the options
 * say of it (its own algorithm, length and expected digest). */
static int input_check(const Feed *f, const fhash_input *in, Input *ret)
{
        const RunOptions *o = f->options;

        for (size_t i = 0; i < ELEMENTSOF(in->reserved); i++)
                if (in->reserved[i] != 0)
                        return -EINVAL;
        if (in->algorithm) {
                /* Its own algorithm (a manifest line's): one name, not with the options' set. */
                if (o->algos.n > 1)
                        return -EINVAL;
                ret->algo = hash_algo_from_string(in->algorithm);
                if (ret->algo < 0) {
                        ret->algo = o->algos.algos[0];
                        return -EINVAL;
                }
        }
        if (in->error < 0)
                return in->error;
        ret->out_len = in->length_bits / 8;
        if (in->length_bits % 8 != 0 ||
            (ret->out_len &&
             hash_params_digest_size(ret->algo, &(HashParams){ .out_len = ret->out_len }) != ret->out_len))
                return -EINVAL;
        if (!in->path && in->fd < 0)
                return -EINVAL;
        if (ret->expected &&
            (o->algos.n > 1 ? !hash_set_hex_valid(&o->algos, ret->expected)
                            : strlen(ret->expected) !=
                                      2 * (ret->out_len ? ret->out_len : hash_algo_digest_size(ret->algo))))
                return -EINVAL;
        return 0;
}

static const char *status_words(fhash_status st, int error)
{
        switch (st) {
        case FHASH_MISMATCH:
                return "checksum mismatch";
        case FHASH_CHANGED:
                return "file changed while it was being hashed";
        case FHASH_CANCELLED:
                return "cancelled";
        default:
                return strerror(error < 0 ? -error : EIO);
        }
}

/* The errno that stands beside a status (the one of FHASH_ERROR is given). */
static int status_errno(fhash_status st, int error)
{
        switch (st) {
        case FHASH_OK:
        case FHASH_SKIPPED:
                return 0;
        case FHASH_MISMATCH:
                return -EBADMSG;
        case FHASH_CHANGED:
                return -ESTALE;
        case FHASH_CANCELLED:
                return -ECANCELED;
        default:
                return error < 0 ? error : -EIO;
        }
}

static void deliver(Feed *f, size_t index, Slot *s, fhash_status st, int error, uint64_t size, const char *hex,
                    const char *message)
{
        const RunOptions *o = f->options;
        bool hashed = st == FHASH_OK || st == FHASH_MISMATCH;
        fhash_result r = {
                .index = index,
                .name = s->in.name,
                .size = size,
                .digest = hashed && hex && hex[0] ? hex : NULL,
                .error = status_errno(st, error),
                .message = st == FHASH_OK || st == FHASH_SKIPPED ? NULL : message ? message : status_words(st, error),
                .skip = st == FHASH_SKIPPED ? s->skip : NULL,
                .status = st,
                .algorithm = o->algos.n > 1 ? o->algos_name : hash_algo_to_string(s->in.algo),
                .expected = s->in.expected,
                .userdata = s->in.userdata,
        };

        f->fn(&r, f->userdata);
}

/* Delivers the head and every input behind it whose result is in, forgetting each. */
static void advance(Feed *f)
{
        Slot *s;

        while (f->next < f->n_items && (s = slot_of(f, f->next))->answered) {
                if (!s->delivered)
                        deliver(f, f->next, s, s->status, s->error, s->size, s->hex_long ? s->hex_long : s->hex,
                                s->message);
                slot_clear(s);
                f->next++;
        }
}

/* Answers s (input index): at once when it is its turn (or results go as they come), else kept. */
static void answer(Feed *f, size_t index, Slot *s, fhash_status st, int error, uint64_t size, const char *hex,
                   const char *message)
{
        s->answered = true;
        f->n_answered++;
        if (index == f->next || f->options->unordered) {
                deliver(f, index, s, st, error, size, hex, message);
                s->delivered = true;
                if (index == f->next)
                        advance(f);
                return;
        }
        s->status = st;
        s->error = error;
        s->size = size;
        /* Without its text or digest the result still says what happened. */
        if (message)
                s->message = strdup(message);
        if (hex && strlen(hex) < sizeof(s->hex))
                strcpy(s->hex, hex);
        else if (hex)
                s->hex_long = strdup(hex);
}

/* Pulls one input from the source into the ring: 1, 0 at the end of the source (or once cancelled),
 * or -errno. */
static int pull(Feed *f)
{
        const RunOptions *o = f->options;
        fhash_input in = { .fd = -1 };
        Input it = { .fd = -EBADF, .algo = o->algos.algos[0] };
        size_t index;
        Slot *s;
        int k, error;

        k = grow(f);
        if (k < 0)
                return k;
        k = f->next_fn(f->source_userdata, &in);
        if (k <= 0) {
                if (k == 0)
                        f->source_done = true;
                return k;
        }
        it.userdata = in.userdata;
        it.expected = in.expected && in.expected[0] ? in.expected : NULL;
        if (!in.path && in.fd >= 0)
                it.fd = in.fd;
        error = input_check(f, &in, &it);
        if (error < 0)
                it.expected = NULL;
        index = f->n_items;
        s = &f->slots[index & (f->alloc - 1)];
        *s = (Slot){ .in = it, .kept_fd = -EBADF };
        if (in.skip) {
                s->skip = intern_note(f, in.skip);
                if (!s->skip)
                        return -ENOMEM;
        }
        k = slot_copy(s, in.name ? in.name : in.path ? in.path : "", in.path, it.expected);
        if (k < 0)
                return k;
        f->n_items++;
        /* Answered here, in its turn: a skip reason, an error given with it or found above, or a
         * cancelled run. Skips and errors keep their algorithm, so that an input between two of one
         * algorithm does not split their job. */
        if (s->skip)
                answer(f, index, s, FHASH_SKIPPED, 0, 0, NULL, NULL);
        else if (error < 0)
                answer(f, index, s, FHASH_ERROR, error, 0, NULL, NULL);
        return 1;
}

int feed_next(Feed *f, size_t from, size_t *ret_index)
{
        size_t i = from;

        for (;;) {
                int k;

                /* What was pulled may have been delivered at once (and the head moved past it). */
                i = MAX(i, f->next);
                if (i < f->n_items) {
                        Slot *s = slot_of(f, i);

                        if (!s->answered && f->cancelled) {
                                /* Pulled before the cancel, never handed to a backend: answered
                                 * here, in its turn. */
                                answer(f, i, s, FHASH_CANCELLED, -ECANCELED, 0, NULL, NULL);
                                i++;
                                continue;
                        }
                        if (!s->answered) {
                                *ret_index = i;
                                return 1;
                        }
                        i++;
                        continue;
                }
                if (f->source_done || f->n_items - f->next >= FEED_MAX_PENDING)
                        return 0;
                k = pull(f);
                if (k <= 0)
                        return k;
        }
}

const Input *feed_input(const Feed *f, size_t index)
{
        const Slot *s = slot_of(f, index);

        return s && !s->answered ? &s->in : NULL;
}

int feed_open(Feed *f, size_t index, int *ret_fd, uint64_t *ret_size)
{
        const Input *in = feed_input(f, index);
        Slot *s = slot_of(f, index);
        _cleanup_close_ int fd = -EBADF;
        struct stat st;
        bool opened_here = false;

        if (!in)
                return -ESRCH;
        if (s->kept_fd >= 0)
                fd = TAKE_FD(s->kept_fd);
        else if (!in->path || streq(in->path, "-"))
                fd = fcntl(in->path ? STDIN_FILENO : in->fd, F_DUPFD_CLOEXEC, 3);
        else {
                fd = open(in->path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
                opened_here = true;
        }
        if (fd < 0)
                return negative_errno();
        if (fstat(fd, &st) < 0)
                return negative_errno();
        /* As sha256sum: a directory fails here with "Is a directory", not in the engine or fhashd. */
        if (S_ISDIR(st.st_mode))
                return -EISDIR;
        /* The caller's fd and standard input share their flags with the caller: untouched. A FIFO we
         * opened waits for its writer in the caller's loop, not here; anything else reads as
         * opened without O_NONBLOCK (io_uring honours the flag: a device would say EAGAIN). */
        if (in->path && !streq(in->path, "-") && !S_ISFIFO(st.st_mode)) {
                /* One we opened just now has exactly the flags asked above: F_SETFL alone, no F_GETFL
                 * (one system call per file fewer on the way to fhashd). */
                int k = opened_here ? RET_NERRNO(fcntl(fd, F_SETFL, O_RDONLY)) : feed_fd_blocking(fd);

                if (k < 0)
                        return k;
        }
        *ret_size = S_ISREG(st.st_mode) ? (uint64_t)st.st_size : UINT64_MAX;
        *ret_fd = TAKE_FD(fd);
        return in->path && !streq(in->path, "-") && S_ISFIFO(st.st_mode) ? FEED_OPEN_FIFO : 0;
}

bool feed_has_kept_fd(const Feed *f, size_t index)
{
        const Slot *s = slot_of(f, index);

        return s && s->kept_fd >= 0;
}

void feed_keep_fd(Feed *f, size_t index, int fd)
{
        Slot *s = slot_of(f, index);

        if (!s || s->answered) {
                safe_close(fd);
                return;
        }
        safe_close(s->kept_fd);
        s->kept_fd = fd;
}

int feed_fd_blocking(int fd)
{
        int fl = fcntl(fd, F_GETFL);

        if (fl < 0)
                return negative_errno();
        if ((fl & O_NONBLOCK) && fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0)
                return negative_errno();
        return 0;
}

void feed_answer(Feed *f, size_t index, const Outcome *o)
{
        Slot *s = slot_of(f, index);
        fhash_status st = o->status;
        int error = o->error;

        if (!s || s->answered)
                return;
        if (st == FHASH_OK && s->in.expected && (!o->hex || strcasecmp(o->hex, s->in.expected) != 0))
                st = FHASH_MISMATCH;
        if (st == FHASH_ERROR) {
                /* One classing of errnos for both backends: what fhashd's error name for it stands
                 * for. The message keeps the exact words (a "Stale file handle" from NFS is an I/O
                 * error, never a change; a checksum "Bad message" from the file system never a
                 * mismatch). */
                int e = error < 0 ? error : -EIO;

                error = fhash_error_to_errno(fhash_error_from_errno(e), strlen(fhash_error_from_errno(e)));
                answer(f, index, s, st, error, o->size, NULL, o->message ? o->message : strerror(-e));
                return;
        }
        answer(f, index, s, st, error, o->size, o->hex, o->message);
}

bool feed_answered(const Feed *f, size_t index)
{
        const Slot *s = slot_of(f, index);

        return !s || s->answered;
}

uint8_t *feed_flags(Feed *f, size_t index)
{
        Slot *s = slot_of(f, index);

        return s && !s->answered ? &s->flags : NULL;
}

void feed_cancel(Feed *f)
{
        f->cancelled = true;
        /* A caller's source may be a walk of millions of entries: it is not called again. The
         * library's own array costs nothing to pull: each of its inputs gets its cancelled result. */
        if (!f->options->inputs_given)
                f->source_done = true;
}

bool feed_is_cancelled(const Feed *f)
{
        return f->cancelled;
}

size_t feed_pulled(const Feed *f)
{
        return f->n_items;
}

size_t feed_head(const Feed *f)
{
        return f->next;
}

size_t feed_pending(const Feed *f)
{
        return f->n_items - f->next;
}

size_t feed_done(const Feed *f)
{
        return f->n_answered;
}

bool feed_source_done(const Feed *f)
{
        return f->source_done;
}

bool feed_finished(const Feed *f)
{
        return f->source_done && f->next == f->n_items;
}

const RunOptions *feed_options(const Feed *f)
{
        return f->options;
}
