/* SPDX-License-Identifier: MIT */
/* audit-journal.h: an audit's findings as structured journal entries, one MESSAGE_ID per kind */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/*
 * Every entry carries FHASH_AUDIT_ROOT (the directory), FHASH_AUDIT_MANIFEST (the baseline), and, for a
 * file, FHASH_AUDIT_FILE (its name, relative to the root), FHASH_AUDIT_STATUS, and where known
 * FHASH_AUDIT_DIGEST, FHASH_AUDIT_EXPECTED, FHASH_AUDIT_FROM (moved: the old name), FHASH_AUDIT_CHANGES
 * ("content,mode,..."). Select them with journalctl MESSAGE_ID=... or FHASH_AUDIT_STATUS=changed.
 * The identifiers are listed in fhash-audit(8); they never change.
 */
#define AUDIT_MESSAGE_CHANGED "5a37ba86375a4ce080e569933b50a50b"
#define AUDIT_MESSAGE_MISSING "810cf2ea01a54219964d9cfbfe5c705e"
#define AUDIT_MESSAGE_NEW "2b2f703510bc40ee9549c03ff7601181"
#define AUDIT_MESSAGE_MOVED "1ba0a7ee967f4ceba371fbfae6646c7b"
#define AUDIT_MESSAGE_UNREADABLE "dfa50be57cb8495da8b2a917b7c7d930"
#define AUDIT_MESSAGE_SUMMARY "fedd1b3800174ee3a2c5f2d7d04a882d"
#define AUDIT_MESSAGE_CREATED "9deda9dcb25045129cdfc441be6132ed"

typedef struct AuditCounts {
        size_t ok, changed, missing, added, moved, unreadable;
} AuditCounts;

/* One file that is not ok: status is changed, missing, new, moved or unreadable. Errors of the journal
 * are not the audit's: nothing is returned. */
void audit_journal_file(const char *root, const char *manifest, const char *name, const char *status,
                        const char *digest, const char *expected, const char *from, const char *changes);
/* The end of an audit (created: the baseline was made by this run, files counts it). */
void audit_journal_summary(const char *root, const char *manifest, const AuditCounts *c, bool created, size_t files);
