/* SPDX-License-Identifier: MIT */
/* fhashctl.c: main(): one of the checksum tools, or fhashctl's verbs from their module */
#include "sum/personality.h"
#include "sum/verbs-module.h"

int main(int argc, char *argv[])
{
        int r = persona_dispatch(argc, argv);

        if (r != -ENOENT)
                return r;
        return verbs_module_run(argc, argv);
}
