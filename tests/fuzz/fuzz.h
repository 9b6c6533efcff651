/* SPDX-License-Identifier: MIT */
/* fuzz.h: the libFuzzer entry point, shared by the libFuzzer build and the plain driver */
#pragma once

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
