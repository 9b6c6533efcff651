/* SPDX-License-Identifier: MIT */
/* verbs-entry.c: the one symbol fhashctl-verbs.so exports (see verbs-module.h) */
#include "ctl/ctl.h"
#include "ctl/macro.h"
#include "ctl/verbs-module.h"

_public_ int fhashctl_verbs_main(int argc, char *argv[]);

_public_ int fhashctl_verbs_main(int argc, char *argv[])
{
        return ctl_main(argc, argv);
}
