/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "basic/macro.h"
#include "protocol/errors.h"

/* Each name with the errno it maps to, and the errnos a file's result reports under that name (the
 * first of which is the errno itself where it is one; the rest collapse into it). A name with no
 * file errnos is never a per-file outcome of an errno (Mismatch, Changed and Busy have their own
 * causes). */
typedef struct FhashError {
        const char *name;
        int error;
        int file_errors[4];
} FhashError;

static const FhashError fhash_errors[] = {
        { FHASH_ERROR_NOT_FOUND, ENOENT, { ENOENT, ENOTDIR, ENXIO, ENODEV } },
        { FHASH_ERROR_ACCESS_DENIED, EACCES, { EACCES, EPERM } },
        { FHASH_ERROR_IO, EIO, { EIO } },
        { FHASH_ERROR_CHANGED, ESTALE, {} },
        { FHASH_ERROR_NOT_REGULAR, EISDIR, { EISDIR, ESPIPE } },
        { FHASH_ERROR_MISMATCH, EBADMSG, {} },
        { FHASH_ERROR_CANCELLED, ECANCELED, { ECANCELED } },
        { FHASH_ERROR_BUSY, EBUSY, {} },
        { FHASH_ERROR_TOO_LARGE, EFBIG, { EFBIG } },
        { FHASH_ERROR_TIMED_OUT, ETIMEDOUT, { ETIMEDOUT } },
        { FHASH_ERROR_JOB_CLOSED, EPIPE, {} },
        { FHASH_ERROR_RELEASED, ENODATA, {} },
};

static sd_bus_error_map error_map[ELEMENTSOF(fhash_errors) + 1];
static pthread_once_t error_map_once = PTHREAD_ONCE_INIT;

static void error_map_build(void)
{
        for (size_t i = 0; i < ELEMENTSOF(fhash_errors); i++)
                error_map[i] = (sd_bus_error_map)SD_BUS_ERROR_MAP(fhash_errors[i].name, fhash_errors[i].error);
        error_map[ELEMENTSOF(fhash_errors)] = (sd_bus_error_map)SD_BUS_ERROR_MAP_END;
}

const sd_bus_error_map *fhash_error_map(void)
{
        (void)pthread_once(&error_map_once, error_map_build);
        return error_map;
}

const char *fhash_error_from_errno(int error)
{
        int e = error < 0 ? -error : error;

        for (size_t i = 0; e != 0 && i < ELEMENTSOF(fhash_errors); i++)
                for (size_t k = 0; k < ELEMENTSOF(fhash_errors[i].file_errors); k++)
                        if (fhash_errors[i].file_errors[k] == e)
                                return fhash_errors[i].name;
        return FHASH_ERROR_IO;
}

int fhash_error_to_errno(const char *name, size_t n)
{
        for (size_t i = 0; name && i < ELEMENTSOF(fhash_errors); i++)
                if (strlen(fhash_errors[i].name) == n && memcmp(fhash_errors[i].name, name, n) == 0)
                        return -fhash_errors[i].error;
        return -EIO;
}
