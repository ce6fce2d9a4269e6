/* SPDX-License-Identifier: MIT */
/* schedule.c - the kernel schedule's defaults, equality, text form and JSON
 * object, generated from schedule.def; see schedule.h.
 *
 * The text form and the JSON object are read by people and by older and
 * newer patc (report.json, tune.jsonl): their keys, order and wording are
 * the table's, so a row changes them only where it is added. */
#include "schedule.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>

const KernelScheduleFieldInfo kernel_schedule_fields[SCHED_NFIELDS] = {
#define X(E, field, type, dflt, json, kind, lo, hi, order, text, neg, flags, doc) \
	{#field, json, dflt, kind, lo, hi, order, text, neg, flags, doc},
#include "schedule.def"
#undef X
};

const KernelSchedule kernel_schedule_default = {
#define X(E, field, type, dflt, json, kind, lo, hi, order, text, neg, flags, doc) .field = dflt,
#include "schedule.def"
#undef X
};

int64_t kernel_schedule_get(const KernelSchedule *s, KernelScheduleField f)
{
	switch (f) {
#define X(E, field, type, dflt, json, kind, lo, hi, order, text, neg, flags, doc) \
	case SCHED_##E:                                                             \
		return s->field;
#include "schedule.def"
#undef X
	case SCHED_NFIELDS:
		break;
	}
	return 0;
}

void kernel_schedule_set(KernelSchedule *s, KernelScheduleField f, int64_t v)
{
	switch (f) {
#define X(E, field, type, dflt, json, kind, lo, hi, order, text, neg, flags, doc) \
	case SCHED_##E:                                                             \
		s->field = (type)v;                                                     \
		break;
#include "schedule.def"
#undef X
	case SCHED_NFIELDS:
		break;
	}
}

bool kernel_schedule_equal(const KernelSchedule *a, const KernelSchedule *b)
{
	return true
#define X(E, field, type, dflt, json, kind, lo, hi, order, text, neg, flags, doc) &&a->field == b->field
#include "schedule.def"
#undef X
	    ;
}

bool kernel_schedule_is_default(const KernelSchedule *s)
{
	return kernel_schedule_equal(s, &kernel_schedule_default);
}

/* The GPU mapping's first field (its leader: the mapping is given where it
 * is not 0). */
static KernelScheduleField mapping_leader(void)
{
	int f = 0;
	while (f < SCHED_NFIELDS - 1 && kernel_schedule_fields[f].kind != SCHED_JSON_MAPPING)
		f++;
	return (KernelScheduleField)f;
}

static bool mapping_given(const KernelSchedule *s)
{
	const KernelScheduleField leader = mapping_leader();
	return kernel_schedule_fields[leader].kind == SCHED_JSON_MAPPING && kernel_schedule_get(s, leader) != 0;
}

void kernel_schedule_text(const KernelSchedule *s, char *buf, size_t len)
{
	if (kernel_schedule_is_default(s)) {
		snprintf(buf, len, "default");
		return;
	}
	const bool mapped = mapping_given(s);
	const KernelScheduleField leader = mapping_leader();
	size_t n = 0;
	buf[0] = 0;
	for (int place = 0; place < SCHED_NFIELDS && n < len; place++)
		for (int f = 0; f < SCHED_NFIELDS; f++) {
			const KernelScheduleFieldInfo *d = &kernel_schedule_fields[f];
			if (d->text_order != place)
				continue;
			const long long v = (long long)kernel_schedule_get(s, (KernelScheduleField)f);
			const char *sep = n ? ", " : "", *fmt = NULL;
			if (d->kind == SCHED_JSON_MAPPING) {
				if (mapped)
					fmt = d->text, sep = f == (int)leader ? sep : "";
			} else if (v > 0)
				fmt = d->text;
			else if (v < 0 && !(mapped && (d->flags & SCHED_TEXT_NEG_UNMAPPED)))
				fmt = d->neg ? d->neg : d->text;
			if (fmt) {
				char said[96];
				snprintf(said, sizeof said, fmt, v, v == 1 ? "" : "s");
				n += (size_t)snprintf(buf + n, len - n, "%s%s", sep, said);
			}
		}
}

cJSON *kernel_schedule_to_json(const KernelSchedule *s)
{
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	const bool mapped = mapping_given(s);
	for (int f = 0; f < SCHED_NFIELDS; f++) {
		const KernelScheduleFieldInfo *d = &kernel_schedule_fields[f];
		const int64_t v = kernel_schedule_get(s, (KernelScheduleField)f);
		const bool write = d->kind == SCHED_JSON_REQUIRED || d->kind == SCHED_JSON_ALWAYS ||
		                   (d->kind == SCHED_JSON_NONZERO && v != 0) || (d->kind == SCHED_JSON_MAPPING && mapped);
		if (write)
			cJSON_AddNumberToObject(o, d->json, (double)v);
	}
	return o;
}

/* Field d of o: 1 and *v where it is an integer in d's range, 0 where it
 * is absent and may be, -1 where it is malformed (another type, a
 * fraction, out of range: a line edited or corrupted is no measurement of
 * any kernel). */
static int read_field(const cJSON *o, const KernelScheduleFieldInfo *d, int64_t *v)
{
	const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, d->json);
	if (!j)
		return d->kind == SCHED_JSON_REQUIRED ? -1 : 0;
	const double x = cJSON_IsNumber(j) ? j->valuedouble : NAN;
	if (!(x >= d->lo && x <= d->hi) || x != floor(x))
		return -1;
	*v = (int64_t)x;
	return 1;
}

bool kernel_schedule_from_json(const cJSON *o, KernelSchedule *s)
{
	*s = kernel_schedule_default;
	int mapping = 0, given = 0; /* the mapping's fields, and those given */
	for (int f = 0; f < SCHED_NFIELDS; f++) {
		const KernelScheduleFieldInfo *d = &kernel_schedule_fields[f];
		int64_t v;
		const int got = read_field(o, d, &v);
		if (got < 0)
			return false;
		if (got > 0)
			kernel_schedule_set(s, (KernelScheduleField)f, v);
		mapping += d->kind == SCHED_JSON_MAPPING;
		given += d->kind == SCHED_JSON_MAPPING && got > 0;
	}
	return given == 0 || given == mapping;
}
