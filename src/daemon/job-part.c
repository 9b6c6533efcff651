/* SPDX-License-Identifier: MIT */
/* job-part.c: a job's inputs in parts (one EngineJob per call) and their byte totals */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>

#include "basic/macro.h"
#include "daemon/job-part.h"

JobPart *job_part_free(JobPart *p)
{
        if (p) {
                engine_job_unref(p->engine_job);
                user_charge_deinit(&p->dirs_charge);
                user_charge_deinit(&p->names_charge);
                free(p->engine_to_input);
                free(p);
        }
        return NULL;
}

int job_part_new(Engine *e, HashAlgo algo, const EngineJobOptions *options, size_t n_alloc, void *owner,
                 JobPart **ret)
{
        JobPart *p = calloc(1, sizeof(*p));
        int r = -ENOMEM;

        if (p) {
                *p = (JobPart){ .owner = owner, .n_alloc = n_alloc, .engine_to_input = calloc(n_alloc, sizeof(uint32_t)),
                                .dirs_charge = USER_CHARGE_INIT(USER_RESOURCE_FDS),
                                .names_charge = USER_CHARGE_INIT(USER_RESOURCE_MEMORY) };
                if (p->engine_to_input)
                        r = engine_job_new(e, algo, options, &p->engine_job);
        }
        if (r < 0) {
                job_part_free(p);
                return r;
        }
        *ret = p;
        return 0;
}

void job_part_map(JobPart *p, size_t engine_index, uint32_t i)
{
        /* One number per input of the call. */
        assert(engine_index < p->n_alloc);
        p->engine_to_input[engine_index] = i;
        p->n_engine_inputs = MAX(p->n_engine_inputs, engine_index + 1);
}

void job_parts_link(JobParts *ps, JobPart *p)
{
        LIST_APPEND_BY(next, prev, ps->head, ps->tail, p);
}

bool job_parts_poll(JobParts *ps, JobPart *p, EngineJobProgress *ret)
{
        EngineJobProgress pr = {};

        engine_job_get_progress(p->engine_job, &pr);
        ps->live_bytes_done = ps->live_bytes_done - p->seen_done + pr.bytes_done;
        ps->live_bytes_total = ps->live_bytes_total - p->seen_total + pr.bytes_total;
        p->seen_done = pr.bytes_done;
        p->seen_total = pr.bytes_total;
        if (ret)
                *ret = pr;
        return pr.running;
}

bool job_parts_retire(JobParts *ps, JobPart *p)
{
        EngineJobProgress pr = {};

        (void)job_parts_poll(ps, p, &pr);
        ps->live_bytes_done -= p->seen_done;
        ps->live_bytes_total -= p->seen_total;
        ps->retired_bytes_done += pr.bytes_done;
        ps->retired_bytes_total += MAX(pr.bytes_total, pr.bytes_done);

        LIST_REMOVE_TAIL_BY(next, prev, ps->head, ps->tail, p);
        job_part_free(p);
        return pr.running;
}

void job_parts_drop(JobParts *ps)
{
        while (ps->head)
                /* job_parts_retire() unlinks the part before it frees it; the analyzer loses the unlink. */
                (void)job_parts_retire(ps, ps->head); // NOLINT(clang-analyzer-unix.Malloc)
}

uint64_t job_parts_bytes_done(const JobParts *ps)
{
        return ps->retired_bytes_done + ps->live_bytes_done;
}

uint64_t job_parts_bytes_total(const JobParts *ps)
{
        return ps->retired_bytes_total + ps->live_bytes_total;
}
