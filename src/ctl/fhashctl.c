/* SPDX-License-Identifier: MIT */
/* fhashctl.c: main() only; the program lives in libfhash (ctl.c) so that tests link what ships */
#include "ctl/ctl.h"

int main(int argc, char *argv[])
{
        return ctl_main(argc, argv);
}
