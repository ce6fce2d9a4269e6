/* test_support.c - arena, string buffers, and files written atomically. */
#define _POSIX_C_SOURCE 200809L
#include "testutil.h"
#include "support/util.h"

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

START_TEST(arena_zeroed_aligned)
{
	Arena a;
	arena_init(&a);
	for (int i = 1; i < 3000; i += 7) {
		unsigned char *p = arena_alloc(&a, (size_t)i);
		ck_assert_int_eq((uintptr_t)p % 16, 0);
		for (int j = 0; j < i; j++)
			ck_assert_int_eq(p[j], 0);
		p[i - 1] = 0xAA;
	}
	void *big = arena_alloc(&a, 1 << 20); /* larger than a block */
	ck_assert_ptr_nonnull(big);
	ck_assert_str_eq(arena_strndup(&a, "abcdef", 3), "abc");
	ck_assert_str_eq(arena_printf(&a, "%s-%d", "x", 42), "x-42");
	arena_free(&a);
	ck_assert_ptr_null(a.head);
}
END_TEST

START_TEST(strbuf_grows)
{
	StrBuf sb;
	sb_init(&sb);
	for (int i = 0; i < 1000; i++)
		sb_printf(&sb, "%d,", i % 10);
	ck_assert_uint_eq(sb.len, 2000);
	sb_putc(&sb, '!');
	sb_puts(&sb, "end");
	ck_assert_str_eq(sb.data + 2000, "!end");
	char *s = sb_take(&sb);
	ck_assert_ptr_null(sb.data);
	ck_assert_int_eq(strncmp(s, "0,1,2,", 6), 0);
	free(s);
	char *empty = sb_take(&sb); /* an empty buffer hands over "" */
	ck_assert_str_eq(empty, "");
	free(empty);
}
END_TEST

static int count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	int n = 0;
	for (struct dirent *e; (e = readdir(d));)
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

START_TEST(atomic_write)
{
	char dir[] = "/tmp/patc-test-XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	char path[256];
	snprintf(path, sizeof path, "%s/out.txt", dir);
	ck_assert(util_write_file_atomic(path, "hello\n", 6));
	size_t len;
	char *back = util_read_file(path, &len);
	ck_assert_str_eq(back, "hello\n");
	ck_assert_uint_eq(len, 6);
	free(back);
	/* replacing keeps the old mode */
	ck_assert_int_eq(chmod(path, 0600), 0);
	ck_assert(util_write_file_atomic(path, "again\n", 6));
	struct stat st;
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0600);
	ck_assert_int_eq(count_entries(dir), 1); /* no temporary left */
	/* a directory as target fails with EISDIR and writes nothing */
	errno = 0;
	ck_assert(!util_write_file_atomic(dir, "x", 1));
	ck_assert_int_eq(errno, EISDIR);
	/* a missing directory fails without a trace */
	char missing[300];
	snprintf(missing, sizeof missing, "%s/no/such.txt", dir);
	ck_assert(!util_write_file_atomic(missing, "x", 1));
	ck_assert_int_eq(count_entries(dir), 1);
	/* devices are written in place */
	ck_assert(util_write_file_atomic("/dev/null", "x", 1));
	struct stat devnull;
	ck_assert_int_eq(stat("/dev/null", &devnull), 0);
	ck_assert(S_ISCHR(devnull.st_mode));
	ck_assert_int_eq(unlink(path), 0);
	ck_assert_int_eq(rmdir(dir), 0);
	ck_assert_ptr_null(util_read_file(path, NULL));
}
END_TEST

static Suite *support_suite(void)
{
	Suite *s = suite_create("support");
	TCase *tc = tcase_create("support");
	tcase_add_test(tc, arena_zeroed_aligned);
	tcase_add_test(tc, strbuf_grows);
	tcase_add_test(tc, atomic_write);
	suite_add_tcase(s, tc);
	return s;
}

int main(void) { return run_suite(support_suite()); }
