/* SPDX-License-Identifier: MIT */
/* Bootstrap only, removed once fhashd.c and fhashctl.c land: lets the tree build meanwhile. */
#include <stdio.h>
int main(void)
{
        fputs("not built yet\n", stderr);
        return 1;
}
