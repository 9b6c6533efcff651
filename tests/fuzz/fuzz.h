/* SPDX-License-Identifier: MIT */
/* fuzz.h: the libFuzzer entry point, shared by the libFuzzer build and the plain driver */
#pragma once

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Bytes that matter to the target's parser, so that fuzz-driver.c's mutations reach its corners:
 * each target defines them. */
extern const char fuzz_interesting[];
extern const size_t fuzz_interesting_size;
