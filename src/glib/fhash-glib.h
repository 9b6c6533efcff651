/* SPDX-License-Identifier: MIT */
/* fhash-glib.h: libfhash-glib, fhashd's client library for GLib main loops and GObject introspection */
#pragma once

/*
 * libfhash-glib is a thin GObject layer over libfhash (include/fhash/fhash.h), for programs with a
 * GMainLoop and for the languages that GObject introspection binds (Python, JavaScript, Vala, Rust):
 *
 *     FhashClient *client = fhash_client_new_for_bus(FHASH_BUS_TYPE_SYSTEM, FHASH_CLIENT_FLAGS_NONE);
 *     fhash_client_hash_async(client, paths, cancellable, on_hashed, user_data);
 *     ...
 *     results = fhash_client_hash_finish(client, result, &error);
 *
 * It uses libfhash's non-blocking runs on the caller's GMainContext: the loop never waits for fhashd
 * or a file. A program includes this header only; <fhash/fhash.h> is libfhash's own API, a different
 * one (its names differ: fhash_client_new(), FHASH_ERROR, ...).
 */
#define __FHASH_GLIB_INSIDE__

#include "fhash-client.h"
#include "fhash-enums.h"
#include "fhash-error.h"
#include "fhash-input.h"
#include "fhash-result.h"

#undef __FHASH_GLIB_INSIDE__
