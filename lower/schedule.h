/* SPDX-License-Identifier: MIT */
/* schedule.h - the kernel schedule: the choices beyond the pattern that a
 * backend would otherwise make by itself, tuned by the search, with its
 * defaults, equality, text form and JSON object, all generated from
 * schedule.def (one row per field).  LLVM-free.
 *
 * Invariant: a field at its default (0) keeps the backend's own choice; a
 * schedule of defaults only is the backend's own.
 */
#ifndef PATC_SCHEDULE_H
#define PATC_SCHEDULE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The staged tensor-core kernels' most buffers and warps a block (the
 * range of tcs and tcw; backend_ptx/ptx.h's PTX_TC_MAX_STAGES and
 * PTX_TC_MAX_WARPS, which search/report.c checks against these). */
#define SCHED_TC_MAX_STAGES 6
#define SCHED_TC_MAX_WARPS 8

typedef struct KernelSchedule {
#define X(E, field, type, dflt, json, kind, lo, hi, order, text, neg, flags, doc) type field;
#include "schedule.def"
#undef X
} KernelSchedule;

/* The fields by id, in schedule.def's order. */
typedef enum KernelScheduleField {
#define X(E, field, type, dflt, json, kind, lo, hi, order, text, neg, flags, doc) SCHED_##E,
#include "schedule.def"
#undef X
	SCHED_NFIELDS
} KernelScheduleField;

/* How a field is written to JSON and read back (schedule.def's json column). */
typedef enum KernelScheduleJson {
	SCHED_JSON_REQUIRED,
	SCHED_JSON_ALWAYS,
	SCHED_JSON_NONZERO,
	SCHED_JSON_MAPPING
} KernelScheduleJson;

enum { SCHED_TEXT_NEG_UNMAPPED = 1 };

/* One row of schedule.def. */
typedef struct KernelScheduleFieldInfo {
	const char *name; /* the C field */
	const char *json; /* its key in the JSON object */
	int64_t dflt;
	KernelScheduleJson kind;
	double lo, hi;         /* the values a log line may hold */
	int text_order;        /* its place in the text form, 0 .. SCHED_NFIELDS - 1 */
	const char *text, *neg; /* the text above 0 and below 0 (NULL: text) */
	int flags;             /* SCHED_TEXT_* */
	const char *doc;
} KernelScheduleFieldInfo;

extern const KernelScheduleFieldInfo kernel_schedule_fields[SCHED_NFIELDS];

/* The backend's own schedule: every field at its default. */
extern const KernelSchedule kernel_schedule_default;

/* Field f of s, and s with field f set to v (converted to its type). */
int64_t kernel_schedule_get(const KernelSchedule *s, KernelScheduleField f);
void kernel_schedule_set(KernelSchedule *s, KernelScheduleField f, int64_t v);

/* Whether a and b are one schedule; whether s is the backend's own. */
bool kernel_schedule_equal(const KernelSchedule *a, const KernelSchedule *b);
bool kernel_schedule_is_default(const KernelSchedule *s);

/* The schedule in words into buf[len] (len > 0), cut short where it does
 * not fit: "default", "vector 8, 2 tiles, chunk 128", "32 x 4 threads, 2
 * cols and 4 rows a thread, k in 1, X staged". */
void kernel_schedule_text(const KernelSchedule *s, char *buf, size_t len);

/* The schedule as a new JSON object (NULL when out of memory): the fields
 * that schedule.def's json column writes, in its order. */
struct cJSON *kernel_schedule_to_json(const KernelSchedule *s);

/* Reads a schedule's JSON object o into *s: absent fields at their
 * defaults.  false where o is malformed (a required field absent, one of
 * another type, a fraction or out of range, some of the mapping's fields
 * given but not all): no schedule that patc wrote; *s is then unspecified.
 * The backend's own checks of the mapping (ptx_bx_legal) are the caller's. */
bool kernel_schedule_from_json(const struct cJSON *o, KernelSchedule *s);

#endif
