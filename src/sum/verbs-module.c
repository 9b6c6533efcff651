/* SPDX-License-Identifier: MIT */
/* verbs-module.c: loads fhashctl-verbs.so and runs its verbs */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "basic/macro.h"
#include "build-config.h"
#include "sum/verbs-module.h"

#define VERBS_MODULE_NAME "fhashctl-verbs.so"

/* The module beside the running binary, if there is one there: how a build tree runs (meson puts
 * both in the same directory); an installed fhashctl in /usr/bin has none beside it. */
static bool module_beside_exe(char *buf, size_t size)
{
        char exe[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
        char *slash;

        if (n <= 0)
                return false;
        exe[n] = '\0';
        slash = strrchr(exe, '/');
        if (!slash)
                return false;
        *slash = '\0';
        if ((size_t)snprintf(buf, size, "%s/%s", exe, VERBS_MODULE_NAME) >= size)
                return false;
        return access(buf, R_OK) == 0;
}

int verbs_module_run(int argc, char *argv[])
{
        char path[PATH_MAX];
        int (*entry)(int, char **);
        void *h;

        if (!module_beside_exe(path, sizeof(path)))
                snprintf(path, sizeof(path), "%s/%s", FHASH_PKGLIBDIR, VERBS_MODULE_NAME);
        /* RTLD_NOW: a missing symbol is said here, not as a crash in the middle of a run. The
         * module and its libraries stay loaded until exit. */
        h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (!h) {
                fprintf(stderr, "fhashctl: cannot load its verbs from %s: %s\n", path, dlerror());
                return 1;
        }
        *(void **)&entry = dlsym(h, VERBS_MODULE_ENTRY);
        if (!entry) {
                fprintf(stderr, "fhashctl: %s has no %s: %s\n", path, VERBS_MODULE_ENTRY, dlerror());
                dlclose(h);
                return 1;
        }
        /* Never closed: the verbs' threads and libraries may outlive ctl_main() until exit. */
        return entry(argc, argv); // cppcheck-suppress resourceLeak
}
