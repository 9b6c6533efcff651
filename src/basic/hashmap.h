/* SPDX-License-Identifier: MIT */
/* hashmap.h: uthash (Debian's uthash-dev), with a failed allocation reported instead of exit() */
#pragma once

#include <errno.h>

/* By default uthash calls exit() when a table cannot grow. With this, HASH_ADD* leaves the item out
 * instead, and HASH_ADD_RESULT() says so: a daemon answers ENOMEM to one call and goes on. Every
 * file that adds to a table includes uthash through here, never directly. */
#define HASH_NONFATAL_OOM 1
#include <uthash.h>

/* After HASH_ADD*(..., item): 0, or -ENOMEM when the item was not added. */
#define HASH_ADD_RESULT(item) ((item)->hh.tbl ? 0 : -ENOMEM)
