/* SPDX-License-Identifier: MIT */
/* verbs-entry.c: the one symbol fhashctl-verbs.so exports */
#include "ctl/ctl.h"
#include "ctl/macro.h"

/* fhashctl's binary (src/sum/verbs-module.c) dlsym()s it by this name, VERBS_MODULE_ENTRY there.
 * The name is the whole contract, and it is not in a header both include: the drop-in tools and
 * the verbs are layers side by side (scripts/check-layers). A name that disagreed would fail every
 * verb with "has no fhashctl_verbs_main", which every test of a verb would see. */
_public_ int fhashctl_verbs_main(int argc, char *argv[]);

_public_ int fhashctl_verbs_main(int argc, char *argv[])
{
        return ctl_main(argc, argv);
}
