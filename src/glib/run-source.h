/* SPDX-License-Identifier: MIT */
/* run-source.h: a GSource that steps a libfhash run on a GMainContext */
#pragma once

#include <glib.h>

#include "fhash/fhash.h"

/* A source for run r (which it does not own) whose callback (a GSourceFunc, set with
 * g_source_set_callback()) is to call fhash_run_process(r) and return G_SOURCE_CONTINUE while the
 * run goes on. It dispatches when the run's fd is ready or its timeout has come (at once the first
 * time), and after each dispatch it follows the run again: the fd (which may change), its events,
 * its timeout. The main loop polls; nothing here ever waits. */
GSource *run_source_new(fhash_run *r);
