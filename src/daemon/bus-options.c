/* SPDX-License-Identifier: MIT */
/* bus-options.c: the algorithm argument and the a{sv} options of HashFds, HashPaths and AddFds */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"
#include "basic/strv.h"
#include "daemon/bus-args.h"
#include "daemon/bus-options.h"
#include "fhash/fhash-dbus.h"

void hash_options_done(HashOptions *o)
{
        o->names = strv_free(o->names);
        o->expected = strv_free(o->expected);
        o->max_size = 0;
        o->dontcache = false;
        o->more = false;
        o->strategy = ENGINE_READ_AUTO;
        o->priority = JOB_PRIORITY_NORMAL;
        o->packed = false;
        o->has_params = false;
        hash_params_wipe(&o->params);
        o->context = mfree(o->context);
}

static const struct {
        const char *key;
        HashOptionKey bit;
        const char *type;
} hash_option_keys[] = {
        { "names", HASH_OPTION_NAMES, "as" },          { "expected", HASH_OPTION_EXPECTED, "as" },
        { "max-size", HASH_OPTION_MAX_SIZE, "t" },     { "dontcache", HASH_OPTION_DONTCACHE, "b" },
        { "more", HASH_OPTION_MORE, "b" },            { "strategy", HASH_OPTION_STRATEGY, "s" },
        { "length", HASH_OPTION_LENGTH, "u" },        { "key", HASH_OPTION_KEY, "ay" },
        { "derive-key", HASH_OPTION_DERIVE_KEY, "s" }, { "block-size", HASH_OPTION_BLOCK_SIZE, "u" },
        { "priority", HASH_OPTION_PRIORITY, "s" },     { "packed-results", HASH_OPTION_PACKED, "b" },
};

/* "names, expected, ..." for the keys in allowed, for error messages. */
static void hash_option_list(unsigned allowed, char *buf, size_t size)
{
        size_t l = 0;

        buf[0] = '\0';
        for (size_t k = 0; k < ELEMENTSOF(hash_option_keys) && l < size; k++)
                if (allowed & hash_option_keys[k].bit) {
                        int n = snprintf(buf + l, size - l, "%s%s", l > 0 ? ", " : "", hash_option_keys[k].key);
                        if (n < 0)
                                break;
                        l += (size_t)n;
                }
        if (l == 0)
                (void)snprintf(buf, size, "none");
}

/* Enters the variant if it has the signature the key needs; InvalidArgs naming the key otherwise. */
static int enter_variant(sd_bus_message *m, const char *key, const char *want, sd_bus_error *error)
{
        const char *contents;
        char type;
        int r;

        r = sd_bus_message_peek_type(m, &type, &contents);
        if (r < 0)
                return r;
        if (type != SD_BUS_TYPE_VARIANT || !contents || !streq(contents, want))
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "options: \"%s\" must be of type '%s', not '%s'", key, want,
                                         contents ? contents : "?");
        return sd_bus_message_enter_container(m, SD_BUS_TYPE_VARIANT, want);
}

/* Reads a basic-typed variant value. */
static int read_variant(sd_bus_message *m, const char *key, const char *want, void *ret, sd_bus_error *error)
{
        int r;

        r = enter_variant(m, key, want, error);
        if (r < 0)
                return r;
        r = sd_bus_message_read_basic(m, want[0], ret);
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(m);
}

/* Reads an "as" variant of at most max entries of at most max_len bytes each. */
static int read_variant_strv(sd_bus_message *m, const char *key, size_t max, size_t max_len, char ***ret,
                             sd_bus_error *error)
{
        char what[64];
        int r;

        r = enter_variant(m, key, "as", error);
        if (r < 0)
                return r;
        (void)snprintf(what, sizeof(what), "options: \"%s\"", key);
        r = bus_read_strv_bounded(m, what, max, max_len, ret, error);
        if (r == -E2BIG)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "options: \"%s\" has %zu entries or more for %zu inputs", key, max + 1, max);
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(m);
}

/* "key": exactly HASH_KEY_SIZE bytes, into o (never echoed). */
static int read_variant_key(sd_bus_message *m, const char *key, HashOptions *o, sd_bus_error *error)
{
        const void *p = NULL;
        size_t n = 0;
        int r;

        r = enter_variant(m, key, "ay", error);
        if (r < 0)
                return r;
        r = sd_bus_message_read_array(m, 'y', &p, &n);
        if (r < 0)
                return r;
        if (n != HASH_KEY_SIZE)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "options: \"key\" must be %d bytes, not %zu", HASH_KEY_SIZE, n);
        memcpy(o->params.key, p, HASH_KEY_SIZE);
        o->params.keyed = true;
        return sd_bus_message_exit_container(m);
}

/* The option of o that a takes not: the first of them. */
static const char *param_not_taken(HashAlgo a, const HashOptions *o)
{
        unsigned takes = hash_algo_params(a);

        return o->params.out_len && !(takes & HASH_PARAM_LENGTH)             ? "length"
               : o->params.keyed && !(takes & HASH_PARAM_KEY)                ? "key"
               : o->params.block_size && !(takes & HASH_PARAM_BLOCK_SIZE)    ? "block-size"
                                                                             : "derive-key";
}

/* The parameters read against the algorithm, as hash_params_check() finds them. */
static int check_params(HashAlgo algo, const HashOptions *o, sd_bus_error *error)
{
        int r = hash_params_check(algo, &o->params);

        if (r == -EOPNOTSUPP)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "options: %s takes no \"%s\"",
                                         hash_algo_to_string(algo), param_not_taken(algo, o));
        if (o->params.block_size && (r == -ERANGE || r == -EINVAL))
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "options: \"block-size\" must be a power of two from %u to %u, not %u",
                                         HASH_BLOCK_SIZE_MIN, HASH_BLOCK_SIZE_MAX, o->params.block_size);
        if (r == -ERANGE)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "options: \"length\" of %s is at most %zu bits", hash_algo_to_string(algo),
                                         hash_algo_digest_max(algo) * 8);
        if (r < 0)
                return sd_bus_error_set(error, SD_BUS_ERROR_INVALID_ARGS,
                                        "options: \"key\" and \"derive-key\" exclude each other");
        return 0;
}

int bus_read_hash_options(sd_bus_message *m, size_t n_inputs, const HashAlgoSet *algos, const HashParams *job_params,
                          unsigned allowed, HashOptions *ret, sd_bus_error *error)
{
        HashAlgo algo = algos->algos[0];
        char names[HASH_SET_NAMES_MAX];
        HashOptions o = {};
        size_t digest_size;
        uint32_t length_bits = 0;
        int dontcache = 0, more = 0, packed = 0;
        const char *strategy = NULL, *priority = NULL;
        int r;

        r = sd_bus_message_enter_container(m, SD_BUS_TYPE_ARRAY, "{sv}");
        if (r < 0)
                goto fail;
        for (unsigned seen = 0;;) {
                const char *key;
                unsigned bit = 0;

                r = sd_bus_message_enter_container(m, SD_BUS_TYPE_DICT_ENTRY, "sv");
                if (r < 0)
                        goto fail;
                if (r == 0)
                        break;
                r = sd_bus_message_read_basic(m, SD_BUS_TYPE_STRING, &key);
                if (r < 0)
                        goto fail;

                for (size_t k = 0; k < ELEMENTSOF(hash_option_keys); k++)
                        if (streq(key, hash_option_keys[k].key))
                                bit = hash_option_keys[k].bit;
                if (!(bit & allowed)) {
                        char known[192];

                        hash_option_list(allowed, known, sizeof(known));
                        r = sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                              bit ? "options: \"%.*s\" cannot be given to this call (here: %s)"
                                                  : "options: unknown option \"%.*s\" (known: %s)",
                                              bus_echo_len(key, 64), key, known);
                        goto fail;
                }
                /* Each key once: a repeated key would let one call carry an options array of any
                 * length. */
                if (seen & bit) {
                        r = sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "options: \"%s\" is given twice", key);
                        goto fail;
                }
                seen |= bit;

                /* The arrays are read no further than n_inputs + 1 entries. */
                if (bit == HASH_OPTION_NAMES)
                        r = read_variant_strv(m, key, n_inputs, FHASH_NAME_MAX, &o.names, error);
                else if (bit == HASH_OPTION_EXPECTED)
                        r = read_variant_strv(m, key, n_inputs,
                                              algos->n > 1 ? (size_t)HASH_SET_HEX_MAX : (size_t)2 * HASH_DIGEST_MAX,
                                              &o.expected, error);
                else if (bit == HASH_OPTION_MAX_SIZE)
                        r = read_variant(m, key, "t", &o.max_size, error);
                else if (bit == HASH_OPTION_DONTCACHE)
                        r = read_variant(m, key, "b", &dontcache, error);
                else if (bit == HASH_OPTION_PACKED)
                        r = read_variant(m, key, "b", &packed, error);
                else if (bit == HASH_OPTION_STRATEGY) {
                        r = read_variant(m, key, "s", &strategy, error);
                        if (r >= 0 && engine_read_strategy_from_string(strategy) < 0) {
                                r = sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                                      "options: \"strategy\" must be auto, read, mmap or direct, not \"%.*s\"",
                                                      bus_echo_len(strategy, 64), strategy);
                                goto fail;
                        }
                } else if (bit == HASH_OPTION_PRIORITY) {
                        r = read_variant(m, key, "s", &priority, error);
                        if (r >= 0 && job_priority_from_string(priority) < 0) {
                                r = sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                                      "options: \"priority\" must be normal, interactive or background, not \"%.*s\"",
                                                      bus_echo_len(priority, 64), priority);
                                goto fail;
                        }
                } else if (bit == HASH_OPTION_LENGTH) {
                        r = read_variant(m, key, "u", &length_bits, error);
                        if (r >= 0 && (length_bits == 0 || length_bits % 8 != 0)) {
                                r = sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                                      "options: \"length\" is in bits, a positive multiple of 8, not %u",
                                                      length_bits);
                                goto fail;
                        }
                        o.params.out_len = length_bits / 8;
                } else if (bit == HASH_OPTION_BLOCK_SIZE) {
                        r = read_variant(m, key, "u", &o.params.block_size, error);
                        if (r >= 0 && o.params.block_size == 0) {
                                r = sd_bus_error_set(error, SD_BUS_ERROR_INVALID_ARGS,
                                                     "options: \"block-size\" is in bytes, not 0");
                                goto fail;
                        }
                } else if (bit == HASH_OPTION_KEY)
                        r = read_variant_key(m, key, &o, error);
                else if (bit == HASH_OPTION_DERIVE_KEY) {
                        const char *ctx = NULL;

                        r = read_variant(m, key, "s", &ctx, error);
                        if (r >= 0 && strlen(ctx) > FHASH_NAME_MAX) {
                                r = sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                                      "options: \"derive-key\" is longer than %d bytes", FHASH_NAME_MAX);
                                goto fail;
                        }
                        if (r >= 0) {
                                o.context = strdup(ctx);
                                if (!o.context) {
                                        r = -ENOMEM;
                                        goto fail;
                                }
                                o.params.context = o.context;
                        }
                } else
                        r = read_variant(m, key, "b", &more, error);
                if (r < 0)
                        goto fail;
                r = sd_bus_message_exit_container(m);
                if (r < 0)
                        goto fail;
        }
        r = sd_bus_message_exit_container(m);
        if (r < 0)
                goto fail;
        o.dontcache = dontcache;
        o.more = more;
        o.packed = packed;
        o.strategy = strategy ? engine_read_strategy_from_string(strategy) : ENGINE_READ_AUTO;
        o.priority = priority ? job_priority_from_string(priority) : JOB_PRIORITY_NORMAL;
        o.has_params = o.params.out_len != 0 || o.params.keyed || o.params.context || o.params.block_size;
        if (o.has_params && algos->n > 1) {
                r = sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                      "options: \"%s\" takes one algorithm, not %s",
                                      o.params.out_len        ? "length"
                                      : o.params.keyed        ? "key"
                                      : o.params.block_size   ? "block-size"
                                                              : "derive-key",
                                      hash_algo_set_format(algos, names, sizeof(names)));
                goto fail;
        }
        if (o.has_params) {
                r = check_params(algo, &o, error);
                if (r < 0)
                        goto fail;
        }
        digest_size = hash_params_digest_size(algo, o.has_params ? &o.params : job_params);

        if (o.names && strv_length(o.names) != n_inputs) {
                r = sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                      "options: \"names\" has %zu entries for %zu inputs",
                                      strv_length(o.names), n_inputs);
                goto fail;
        }
        if (o.expected) {
                if (strv_length(o.expected) != n_inputs) {
                        r = sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                              "options: \"expected\" has %zu entries for %zu inputs",
                                              strv_length(o.expected), n_inputs);
                        goto fail;
                }
                for (size_t i = 0; i < n_inputs; i++) {
                        uint8_t buf[HASH_DIGEST_MAX];
                        char *e = o.expected[i];

                        /* "" means: no expectation for this input. */
                        if (e[0] == '\0')
                                continue;
                        if (algos->n > 1 && !hash_set_hex_valid(algos, e)) {
                                r = sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                                      "options: expected[%zu] is not the hex digests of %s joined by ','",
                                                      i, hash_algo_set_format(algos, names, sizeof(names)));
                                goto fail;
                        }
                        if (algos->n == 1 && (strlen(e) != 2 * digest_size || hash_from_hex(e, buf, digest_size) < 0)) {
                                r = sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                                      "options: expected[%zu] is not a %zu-digit hex %s digest",
                                                      i, 2 * digest_size, hash_algo_to_string(algo));
                                goto fail;
                        }
                        for (char *p = e; *p; p++)
                                *p = (char)tolower((unsigned char)*p);
                }
        }

        *ret = o;
        return 0;
fail:
        hash_options_done(&o);
        return r;
}

int bus_read_algorithm(sd_bus_message *m, HashAlgoSet *ret, sd_bus_error *error)
{
        const char *s;
        int r;

        r = sd_bus_message_read_basic(m, SD_BUS_TYPE_STRING, &s);
        if (r < 0)
                return r;
        r = hash_algo_set_parse(s, ret);
        if (r == -E2BIG)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "algorithm: at most %d algorithms in one job, not \"%.*s\"", HASH_SET_MAX,
                                         bus_echo_len(s, 64), s);
        if (r == -ENOTUNIQ)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "algorithm: \"%.*s\" names an algorithm twice", bus_echo_len(s, 64), s);
        if (r < 0)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "algorithm: unknown algorithm \"%.*s\" (known: %s; several: a,b)",
                                         bus_echo_len(s, 64), s, hash_algo_list());
        return 0;
}

int bus_read_algorithm_and_options(sd_bus_message *m, size_t n_inputs, unsigned allowed, HashAlgoSet *ret_algos,
                                   HashOptions *ret, sd_bus_error *error)
{
        HashAlgoSet algos = {};
        int r;

        r = bus_read_algorithm(m, &algos, error);
        if (r < 0)
                return r;
        r = bus_read_hash_options(m, n_inputs, &algos, NULL, allowed, ret, error);
        if (r < 0)
                return r;
        *ret_algos = algos;
        return 0;
}
