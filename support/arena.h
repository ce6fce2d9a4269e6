/* SPDX-License-Identifier: MIT */
/* arena.h - region allocator.
 *
 * Every long-lived object of one compilation (AST nodes, source text, strings)
 * lives in an Arena and is released at once with arena_free().  There is no
 * per-object free.  Allocation never fails silently: on out-of-memory the
 * process reports an internal error (exit code 4), since nothing sensible can
 * continue without memory.
 */
#ifndef PATC_ARENA_H
#define PATC_ARENA_H

#include <stdarg.h>
#include <stddef.h>

typedef struct ArenaBlock ArenaBlock;

typedef struct Arena {
	ArenaBlock *head;
} Arena;

void arena_init(Arena *a);
void arena_free(Arena *a);
/* Zeroed, 16-byte aligned memory that lives until arena_free(). */
void *arena_alloc(Arena *a, size_t size);
char *arena_strdup(Arena *a, const char *s);
char *arena_strndup(Arena *a, const char *s, size_t n);
char *arena_printf(Arena *a, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
char *arena_vprintf(Arena *a, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));

#endif
