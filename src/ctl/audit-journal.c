/* SPDX-License-Identifier: MIT */
/* audit-journal.c: an audit's findings as structured journal entries, one MESSAGE_ID per kind */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <syslog.h>
#include <systemd/sd-journal.h>

#include "ctl/audit-journal.h"
#include "ctl/macro.h"

static const struct {
        const char *status, *id;
} kinds[] = {
        { "changed", AUDIT_MESSAGE_CHANGED }, { "missing", AUDIT_MESSAGE_MISSING }, { "new", AUDIT_MESSAGE_NEW },
        { "moved", AUDIT_MESSAGE_MOVED },     { "unreadable", AUDIT_MESSAGE_UNREADABLE },
};

/* "KEY=value" as an iovec, allocated; NULL when value is NULL or out of memory (the field is left out). */
static bool field(struct iovec *iov, size_t *n, const char *key, const char *value)
{
        char *s;

        if (!value)
                return true;
        if (asprintf(&s, "%s=%s", key, value) < 0)
                return false;
        iov[(*n)++] = (struct iovec){ .iov_base = s, .iov_len = strlen(s) };
        return true;
}

void audit_journal_file(const char *root, const char *manifest, const char *name, const char *status,
                        const char *digest, const char *expected, const char *from, const char *changes)
{
        _cleanup_free_ char *message = NULL;
        const char *id = NULL;
        struct iovec iov[12];
        size_t n = 0;
        int r;

        for (size_t i = 0; i < ELEMENTSOF(kinds); i++)
                if (streq(kinds[i].status, status))
                        id = kinds[i].id;
        if (!id)
                return;
        if (from)
                r = asprintf(&message, "%s: %s: moved from %s", root, name, from);
        else
                r = asprintf(&message, "%s: %s: %s%s%s%s", root, name, status, changes ? " (" : "", changes ?: "",
                             changes ? ")" : "");
        if (r < 0)
                return;
        /* A field whose value is unknown is left out: "FIELD=" would say it is the empty string. */
        if (field(iov, &n, "MESSAGE", message) && field(iov, &n, "MESSAGE_ID", id) &&
            field(iov, &n, "PRIORITY", "4" /* LOG_WARNING */) && field(iov, &n, "FHASH_AUDIT_ROOT", root) &&
            field(iov, &n, "FHASH_AUDIT_MANIFEST", manifest) && field(iov, &n, "FHASH_AUDIT_FILE", name) &&
            field(iov, &n, "FHASH_AUDIT_STATUS", status) && field(iov, &n, "FHASH_AUDIT_DIGEST", digest) &&
            field(iov, &n, "FHASH_AUDIT_EXPECTED", expected) && field(iov, &n, "FHASH_AUDIT_FROM", from) &&
            field(iov, &n, "FHASH_AUDIT_CHANGES", changes))
                (void)sd_journal_sendv(iov, (int)n);
        for (size_t i = 0; i < n; i++)
                free(iov[i].iov_base);
}

void audit_journal_summary(const char *root, const char *manifest, const AuditCounts *c, bool created, size_t files)
{
        if (created) {
                (void)sd_journal_send("MESSAGE=%s: baseline %s created, %zu files", root, manifest, files,
                                      "MESSAGE_ID=%s", AUDIT_MESSAGE_CREATED, "PRIORITY=%d", LOG_NOTICE,
                                      "FHASH_AUDIT_ROOT=%s", root, "FHASH_AUDIT_MANIFEST=%s", manifest,
                                      "FHASH_AUDIT_FILES=%zu", files, NULL);
                return;
        }
        bool clean = c->changed + c->missing + c->added + c->moved + c->unreadable == 0;
        (void)sd_journal_send("MESSAGE=%s: %zu ok, %zu changed, %zu missing, %zu new, %zu moved, %zu unreadable", root,
                              c->ok, c->changed, c->missing, c->added, c->moved, c->unreadable,
                              "MESSAGE_ID=%s", AUDIT_MESSAGE_SUMMARY, "PRIORITY=%d", clean ? LOG_INFO : LOG_WARNING,
                              "FHASH_AUDIT_ROOT=%s", root, "FHASH_AUDIT_MANIFEST=%s", manifest,
                              "FHASH_AUDIT_OK=%zu", c->ok, "FHASH_AUDIT_CHANGED=%zu", c->changed,
                              "FHASH_AUDIT_MISSING=%zu", c->missing, "FHASH_AUDIT_NEW=%zu", c->added,
                              "FHASH_AUDIT_MOVED=%zu", c->moved, "FHASH_AUDIT_UNREADABLE=%zu", c->unreadable, NULL);
}
