/* SPDX-License-Identifier: MIT */
/* test_schedule.c - the kernel schedule generated from lower/schedule.def:
 * equality field by field, the text form and JSON object as patc has always
 * written them (report.json, tune.jsonl), the JSON's round trip on random
 * schedules, and the refusal of malformed objects. */
#include "testutil.h"
#include "lower/schedule.h"

#include <cjson/cJSON.h>

/* A field's value one away from its default. */
static int64_t other_value(KernelScheduleField f)
{
	return kernel_schedule_fields[f].dflt + 1;
}

/* The default schedule is itself and the backend's own; changing any one
 * field makes it another, and only that field moves. */
START_TEST(default_and_one_field)
{
	const KernelScheduleField f = (KernelScheduleField)_i;
	const KernelSchedule d = kernel_schedule_default;
	ck_assert(kernel_schedule_equal(&d, &d));
	ck_assert(kernel_schedule_is_default(&d));
	ck_assert_int_eq(kernel_schedule_get(&d, f), kernel_schedule_fields[f].dflt);
	KernelSchedule s = d;
	kernel_schedule_set(&s, f, other_value(f));
	ck_assert_msg(!kernel_schedule_equal(&s, &d), "%s", kernel_schedule_fields[f].name);
	ck_assert_msg(!kernel_schedule_equal(&d, &s), "%s", kernel_schedule_fields[f].name);
	ck_assert(!kernel_schedule_is_default(&s));
	for (int g = 0; g < SCHED_NFIELDS; g++)
		ck_assert_int_eq(kernel_schedule_get(&s, (KernelScheduleField)g),
		                 g == (int)f ? other_value(f) : kernel_schedule_fields[g].dflt);
	char text[128];
	kernel_schedule_text(&s, text, sizeof text);
	ck_assert_str_ne(text, "default");
}
END_TEST

/* The table: every text place once, JSON keys distinct, ranges that hold
 * the default or exclude it only for fields written when not 0. */
START_TEST(table_consistent)
{
	bool place[SCHED_NFIELDS] = {false};
	for (int f = 0; f < SCHED_NFIELDS; f++) {
		const KernelScheduleFieldInfo *d = &kernel_schedule_fields[f];
		ck_assert(d->text_order >= 0 && d->text_order < SCHED_NFIELDS && !place[d->text_order]);
		place[d->text_order] = true;
		ck_assert(d->lo <= d->hi && d->text && d->doc);
		for (int g = 0; g < f; g++)
			ck_assert_str_ne(d->json, kernel_schedule_fields[g].json);
		const bool holds = d->dflt >= d->lo && d->dflt <= d->hi;
		ck_assert_msg(holds || d->kind == SCHED_JSON_NONZERO || d->kind == SCHED_JSON_MAPPING, "%s", d->name);
	}
}
END_TEST

/* Schedules with the text and the JSON object the hand-written printers
 * gave before the table (report.json's schedule_text and schedule). */
static const struct {
	KernelSchedule s;
	const char *text, *json;
} printed[] = {
	{{0}, "default", "{\"vector_width\":0,\"col_tiles\":0,\"chunk\":0,\"stage\":0,\"threads\":0}"},
	{{.vector_width = 8, .col_tiles = 2, .chunk = 128}, "vector 8, 2 tiles, chunk 128",
	 "{\"vector_width\":8,\"col_tiles\":2,\"chunk\":128,\"stage\":0,\"threads\":0}"},
	{{.col_tiles = 1, .chunk = -1, .stage = -1, .threads = 1}, "1 tile, no chunks, X not staged, 1 thread",
	 "{\"vector_width\":0,\"col_tiles\":1,\"chunk\":-1,\"stage\":-1,\"threads\":1}"},
	{{.vector_width = 16, .stage = 1, .threads = 4}, "vector 16, X staged, 4 threads",
	 "{\"vector_width\":16,\"col_tiles\":0,\"chunk\":0,\"stage\":1,\"threads\":4}"},
	{{.bx = 32, .by = 4, .v = 1, .r = 2, .ksplit = 2, .stage = 1, .wsum = 1},
	 "32 x 4 threads, 1 col and 2 rows a thread, k in 2, X staged, k's parts summed in a workspace",
	 "{\"vector_width\":0,\"col_tiles\":0,\"chunk\":0,\"stage\":1,\"threads\":0,\"wsum\":1,\"bx\":32,\"by\":4,"
	 "\"v\":1,\"r\":2,\"ksplit\":2}"},
	{{.bx = 64, .by = 2, .v = 4, .r = 1, .ksplit = 1, .stage = -1}, "64 x 2 threads, 4 cols and 1 row a thread, k in 1",
	 "{\"vector_width\":0,\"col_tiles\":0,\"chunk\":0,\"stage\":-1,\"threads\":0,\"bx\":64,\"by\":2,\"v\":4,\"r\":1,"
	 "\"ksplit\":1}"},
	{{.stage = 1, .tcs = 6, .tcw = 8}, "X staged, 6 buffers, blocks of 8 warps",
	 "{\"vector_width\":0,\"col_tiles\":0,\"chunk\":0,\"stage\":1,\"threads\":0,\"tcs\":6,\"tcw\":8}"},
	{{.stage = -1, .wg = 1}, "X not staged, wgmma",
	 "{\"vector_width\":0,\"col_tiles\":0,\"chunk\":0,\"stage\":-1,\"threads\":0,\"wg\":1}"},
};

static char *json_text(const KernelSchedule *s)
{
	cJSON *o = kernel_schedule_to_json(s);
	ck_assert_ptr_nonnull(o);
	char *text = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return text;
}

START_TEST(printed_as_before)
{
	const KernelSchedule *s = &printed[_i].s;
	char text[128];
	kernel_schedule_text(s, text, sizeof text);
	ck_assert_str_eq(text, printed[_i].text);
	char *json = json_text(s);
	ck_assert_str_eq(json, printed[_i].json);
	free(json);
	/* cut short: a prefix of the whole, as snprintf cuts */
	for (size_t len = 1; len < strlen(printed[_i].text); len += 3) {
		char cut[128];
		kernel_schedule_text(s, cut, len);
		ck_assert_uint_eq(strlen(cut), len - 1);
		ck_assert(!strncmp(cut, printed[_i].text, len - 1));
	}
}
END_TEST

/* A random schedule that a log line may hold: each field in its range or
 * at its default, the mapping's fields all given or none. */
static KernelSchedule random_schedule(uint64_t *st)
{
	KernelSchedule s = kernel_schedule_default;
	const bool mapped = test_rnd(st, 2);
	for (int f = 0; f < SCHED_NFIELDS; f++) {
		const KernelScheduleFieldInfo *d = &kernel_schedule_fields[f];
		if (d->kind == SCHED_JSON_MAPPING ? !mapped : test_rnd(st, 3) == 0)
			continue; /* the default */
		const int64_t span = (int64_t)d->hi - (int64_t)d->lo + 1;
		const int64_t v = (int64_t)d->lo + (int64_t)test_rnd(st, (uint32_t)(span < 100000 ? span : 100000));
		kernel_schedule_set(&s, (KernelScheduleField)f, v);
	}
	return s;
}

START_TEST(json_round_trip)
{
	uint64_t st = 4242;
	for (int it = 0; it < 2000; it++) {
		const KernelSchedule s = random_schedule(&st);
		char *json = json_text(&s);
		cJSON *o = cJSON_Parse(json);
		KernelSchedule back;
		ck_assert_msg(kernel_schedule_from_json(o, &back), "%s", json);
		ck_assert_msg(kernel_schedule_equal(&s, &back), "%s", json);
		char a[128], b[128];
		kernel_schedule_text(&s, a, sizeof a);
		kernel_schedule_text(&back, b, sizeof b);
		ck_assert_str_eq(a, b);
		ck_assert(!strcmp(a, "default") == kernel_schedule_is_default(&s));
		/* written again: the same text */
		char *again = json_text(&back);
		ck_assert_str_eq(json, again);
		free(again);
		cJSON_Delete(o);
		free(json);
	}
}
END_TEST

/* Objects that are no schedule patc wrote, and older ones that are. */
static const struct {
	const char *json;
	bool reads;
} objects[] = {
	{"{}", false},
	{"{\"vector_width\":8,\"col_tiles\":0}", false},                    /* chunk absent */
	{"{\"vector_width\":8,\"col_tiles\":0,\"chunk\":-1}", true},        /* before stage and threads */
	{"{\"vector_width\":8.5,\"col_tiles\":0,\"chunk\":0}", false},      /* a fraction */
	{"{\"vector_width\":\"8\",\"col_tiles\":0,\"chunk\":0}", false},    /* a string */
	{"{\"vector_width\":65,\"col_tiles\":0,\"chunk\":0}", false},       /* out of range */
	{"{\"vector_width\":0,\"col_tiles\":0,\"chunk\":-2}", false},       /* out of range */
	{"{\"vector_width\":0,\"col_tiles\":0,\"chunk\":0,\"tcs\":1}", false}, /* below the least buffers */
	{"{\"vector_width\":0,\"col_tiles\":0,\"chunk\":0,\"tcw\":9}", false},
	{"{\"vector_width\":0,\"col_tiles\":0,\"chunk\":0,\"bx\":32,\"by\":4,\"v\":1,\"r\":1}", false}, /* 4 of 5 */
	{"{\"vector_width\":0,\"col_tiles\":0,\"chunk\":0,\"bx\":32,\"by\":4,\"v\":1,\"r\":1,\"ksplit\":1}", true},
	{"{\"vector_width\":0,\"col_tiles\":0,\"chunk\":0,\"bx\":0,\"by\":4,\"v\":1,\"r\":1,\"ksplit\":1}", false},
	{"{\"ksplit\":1,\"r\":1,\"v\":1,\"by\":4,\"bx\":32,\"chunk\":0,\"col_tiles\":0,\"vector_width\":0}", true},
	{"[1, 2]", false},
	{"5", false},
};

START_TEST(reads_or_refuses)
{
	cJSON *o = cJSON_Parse(objects[_i].json);
	ck_assert_ptr_nonnull(o);
	KernelSchedule s;
	ck_assert_msg(kernel_schedule_from_json(o, &s) == objects[_i].reads, "%s", objects[_i].json);
	cJSON_Delete(o);
}
END_TEST

static Suite *schedule_suite(void)
{
	Suite *s = suite_create("schedule");
	TCase *tc = tcase_create("schedule");
	tcase_add_loop_test(tc, default_and_one_field, 0, SCHED_NFIELDS);
	tcase_add_test(tc, table_consistent);
	tcase_add_loop_test(tc, printed_as_before, 0, (int)(sizeof printed / sizeof printed[0]));
	tcase_add_test(tc, json_round_trip);
	tcase_add_loop_test(tc, reads_or_refuses, 0, (int)(sizeof objects / sizeof objects[0]));
	suite_add_tcase(s, tc);
	return s;
}

int main(void) { return run_suite(schedule_suite()); }
