/* SPDX-License-Identifier: MIT */
/* stdlib_path.h - where patc finds its standard pattern library. */
#ifndef PATC_STDLIB_PATH_H
#define PATC_STDLIB_PATH_H

#include <stddef.h>

/* The standard library's directory (see stdlib_path.c for the order);
 * the result lives in buf or is static. */
const char *find_stdlib(char *buf, size_t len);

#endif
