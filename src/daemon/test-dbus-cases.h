/* SPDX-License-Identifier: MIT */
/* test-dbus-cases.h: what the tests of dbus-message share: the cases, the checks, sd-bus's verdicts */
#pragma once

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "daemon/dbus-message.h"
#include "daemon/test-dbus-builder.h"
#include "daemon/test-dbus-oracle.h"

/*
 * Each case builds one message that breaks one rule (or none), in both byte orders, and checks
 * the phrase dbus_message_parse() gives. The same bytes, with the same fds, then go to a real
 * sd-bus (test-dbus-oracle.c), whose verdict must be what the case says: every message the gate
 * takes, sd-bus takes too and sees with the same fields (the rewrite's output as well); where the
 * gate refuses what sd-bus takes, the case says so (SD_TAKES), which documents every rule that is
 * the specification's or fhashd's alone.
 *
 * One test program per kind of rule, each with its table of cases and its own sd-bus:
 * test-dbus-message-framing (the fixed header, the fields array, the fields each type needs),
 * -strings (strings, UTF-8, signatures, names), -unknown (unknown fields' values), -fds (UNIX_FDS,
 * the rewrite, the messages that leaked fds) and -real (messages made by sd-bus, GDBus and
 * dbus-daemon).
 */

extern const char *current; /* the case being checked, for failure messages */

#define CHECK(c)                                                                                            \
        do {                                                                                                \
                if (!(c)) {                                                                                 \
                        print_error("%s: %s:%d: %s\n", current, __FILE__, __LINE__, #c);                    \
                        fail();                                                                             \
                }                                                                                           \
        } while (0)

/* The test program's sd-bus, set up once for its group of tests. */
extern Oracle *oracle;
int test_oracle_setup(void **state);
int test_oracle_teardown(void **state);

typedef enum SdVerdict {
        SD_REFUSES,   /* sd-bus 252 drops it too */
        SD_TAKES,     /* sd-bus takes it: the rule is the specification's or fhashd's only */
        SD_NOT_ASKED, /* framing: sd-bus would close the connection (or the bytes are not one message) */
} SdVerdict;

typedef struct Case {
        const char *name;
        void (*build)(Msg *m);
        const char *why; /* NULL: valid */
        SdVerdict sd;
} Case;

/* Everything a message the gate takes must satisfy; o: also ask sd-bus. */
void check_valid(Oracle *o, const uint8_t *m, size_t len, size_t n_fds);
/* The gate's verdict on m is want_why (NULL: valid), and sd-bus's (the group's oracle) is sd. */
void check_case(const uint8_t *m, size_t len, size_t n_fds, const char *want_why, SdVerdict sd);
/* Each case in both byte orders, through check_case(). */
void run_cases(const Case *cases, size_t n);

/* `test-dbus-message-KIND --corpus DIR` writes the cases (but those over 64 KiB) as seeds for
 * tests/fuzz/fuzz-dbus-message, named case-KIND-NN: a first byte with the fds' count, then the
 * message. The exit status. */
int write_corpus(const char *dir, const char *kind, const Case *cases, size_t n);

/* tests/data/dbus-message under FHASH_SOURCE_ROOT; skips the test when that is not set. */
const char *test_data_dir(void);
/* A test data file, at most 64 KiB; the caller frees it. */
uint8_t *test_read_file(const char *path, size_t *ret_len);
