/* SPDX-License-Identifier: MIT */
/* test-util.h: what the daemon's unit tests share: charge lookups and the "nothing left" check */
#pragma once

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "daemon/registry.h"
#include "daemon/user.h"

#define UID_A ((uid_t)1000)
#define UID_B ((uid_t)1001)

static inline uint64_t used(Registry *reg, uid_t uid, UserResource r)
{
        return user_used(user_registry_find(&reg->users, uid), r);
}

/* Nothing charged, nothing listed, no User left: what every test ends with. */
static inline void assert_registry_empty(Registry *reg)
{
        for (int r = 0; r < _USER_RESOURCE_MAX; r++)
                assert_int_equal(reg->users.total[r], 0);
        assert_null(reg->users.users);
        assert_null(reg->jobs);
        assert_null(reg->active);
        assert_null(reg->owners);
        assert_null(reg->peers);
}
