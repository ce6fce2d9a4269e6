/* SPDX-License-Identifier: MIT */
/* test_support.c - arena, string buffers, files written atomically (alone
 * and in groups, through signals and exit), bounded lines, the worker pool. */
#define _POSIX_C_SOURCE 200809L
#include "testutil.h"
#include "support/outfile.h"
#include "support/pool.h"
#include "support/util.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <sys/wait.h>

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
		int nonzero = 0; /* (one check a block: each ck_assert writes to Check's pipe) */
		for (int j = 0; j < i; j++)
			nonzero += p[j] != 0;
		ck_assert_int_eq(nonzero, 0);
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
	ck_assert(outfile_write(path, "hello\n", 6));
	size_t len;
	char *back = util_read_file(path, &len);
	ck_assert_str_eq(back, "hello\n");
	ck_assert_uint_eq(len, 6);
	free(back);
	/* replacing keeps the old mode */
	ck_assert_int_eq(chmod(path, 0600), 0);
	ck_assert(outfile_write(path, "again\n", 6));
	struct stat st;
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0600);
	ck_assert_int_eq(count_entries(dir), 1); /* no temporary left */
	/* a directory as target fails with EISDIR and writes nothing */
	errno = 0;
	ck_assert(!outfile_write(dir, "x", 1));
	ck_assert_int_eq(errno, EISDIR);
	/* a missing directory fails without a trace */
	char missing[300];
	snprintf(missing, sizeof missing, "%s/no/such.txt", dir);
	ck_assert(!outfile_write(missing, "x", 1));
	ck_assert_int_eq(count_entries(dir), 1);
	/* devices are written in place */
	ck_assert(outfile_write("/dev/null", "x", 1));
	struct stat devnull;
	ck_assert_int_eq(stat("/dev/null", &devnull), 0);
	ck_assert(S_ISCHR(devnull.st_mode));
	ck_assert_int_eq(unlink(path), 0);
	ck_assert_int_eq(rmdir(dir), 0);
	ck_assert_ptr_null(util_read_file(path, NULL));
}
END_TEST

/* A thread that does nothing but take signals (as OpenBLAS's do). */
static void *idle_thread(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

static void *signal_thread(void *arg)
{
	(void)arg;
	kill(getpid(), SIGTERM);
	for (;;)
		pause();
	return NULL;
}

static bool exists(const char *dir, const char *name)
{
	char path[300];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	return access(path, F_OK) == 0;
}

/* util_getline_max: whole lines, the last one without its newline, and
 * a line past the limit refused (EFBIG) without reading on; EOF errno 0. */
START_TEST(getline_bounded)
{
	static const char text[] = "ab\n\nfghij\nklmnopq\nr";
	FILE *f = fmemopen((void *)text, sizeof text - 1, "r");
	ck_assert_ptr_nonnull(f);
	char *line = NULL;
	size_t cap = 0;
	ck_assert_int_eq(util_getline_max(&line, &cap, f, 6), 3);
	ck_assert_str_eq(line, "ab\n");
	ck_assert_int_eq(util_getline_max(&line, &cap, f, 6), 1);
	ck_assert_int_eq(util_getline_max(&line, &cap, f, 6), 6); /* "fghij\n": just fits */
	ck_assert_str_eq(line, "fghij\n");
	ck_assert_int_eq(util_getline_max(&line, &cap, f, 6), -1); /* "klmnopq\n" does not */
	ck_assert_int_eq(errno, EFBIG);
	ck_assert_int_eq(getc(f), 'q'); /* read no further than the limit */
	ck_assert_int_eq(util_getline_max(&line, &cap, f, 6), 1);
	ck_assert_int_eq(util_getline_max(&line, &cap, f, 6), 1);
	ck_assert_str_eq(line, "r");
	ck_assert_int_eq(util_getline_max(&line, &cap, f, 6), -1);
	ck_assert_int_eq(errno, 0);
	ck_assert(!ferror(f));
	free(line);
	fclose(f);
}
END_TEST

/* The VmFlags line of the mapping holding addr (/proc/self/smaps), into
 * flags; false where none is found. */
static bool vm_flags(const void *addr, char *flags, size_t size)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	if (!f)
		return false;
	char line[512];
	bool in = false, found = false;
	while (!found && fgets(line, sizeof line, f)) {
		unsigned long lo, hi;
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' '))
			in = (uintptr_t)addr >= lo && (uintptr_t)addr < hi;
		else if (in && !strncmp(line, "VmFlags:", 8)) {
			snprintf(flags, size, "%s", line + 8);
			found = true;
		}
	}
	fclose(f);
	return found;
}

START_TEST(measured_memory)
{
	/* small buffers as util_alloc_timed's, larger ones on whole 2 MiB
	 * pages asked to be huge ones (madvise: VmFlags 'hg') */
	float *small = util_alloc_measured(1000);
	ck_assert_ptr_nonnull(small);
	ck_assert_uint_eq((uintptr_t)small % 64, 0);
	free(small);
	const size_t bytes = (size_t)UTIL_MEASURED_MIN + 4;
	char *big = util_alloc_measured(bytes);
	ck_assert_ptr_nonnull(big);
	ck_assert_uint_eq((uintptr_t)big % ((size_t)2 << 20), 0);
	memset(big, 1, bytes);
	char flags[512];
	if (vm_flags(big, flags, sizeof flags))
		ck_assert_msg(strstr(flags, " hg") != NULL, "VmFlags:%s", flags);
	free(big);
}
END_TEST

START_TEST(outfile_groups)
{
	/* (Check's own SIGTERM handler, which outfile.c leaves alone, out of the way) */
	signal(SIGTERM, SIG_DFL);
	char dir[] = "/tmp/patc-test-XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	char a[300], b[300], old[300];
	snprintf(a, sizeof a, "%s/a.txt", dir);
	snprintf(b, sizeof b, "%s/b.txt", dir);
	snprintf(old, sizeof old, "%s/old.txt", dir);
	ck_assert(outfile_write(old, "old\n", 4));
	/* a group: nothing in place before its end, then all of it, the file
	 * named removed */
	ck_assert(outfile_group_begin(dir, 1));
	outfile_group_remove(old);
	ck_assert(outfile_write(a, "a\n", 2));
	ck_assert(outfile_write(b, "b\n", 2));
	ck_assert(!exists(dir, "a.txt") && !exists(dir, "b.txt") && exists(dir, "old.txt"));
	ck_assert(outfile_group_end(true));
	ck_assert(exists(dir, "a.txt") && exists(dir, "b.txt") && !exists(dir, "old.txt"));
	ck_assert_int_eq(count_entries(dir), 2);
	/* a group given up: the earlier files as they were */
	ck_assert(outfile_group_begin(dir, 1));
	ck_assert(outfile_write(a, "A\n", 2));
	ck_assert(outfile_group_end(false));
	char *back = util_read_file(a, NULL);
	ck_assert_str_eq(back, "a\n");
	free(back);
	ck_assert_int_eq(count_entries(dir), 2);
	/* a rename that fails after others (b.txt became a directory while
	 * the group was written): what the group replaced (a.txt) or removed
	 * (old.txt) back as it was, what it added (c.txt) gone, no temporary
	 * file or link left */
	char c[300];
	snprintf(c, sizeof c, "%s/c.txt", dir);
	ck_assert(outfile_write(old, "old\n", 4));
	ck_assert(outfile_group_begin(dir, 1));
	outfile_group_remove(old);
	ck_assert(outfile_write(a, "A\n", 2));
	ck_assert(outfile_write(c, "c\n", 2));
	ck_assert(outfile_write(b, "B\n", 2));
	ck_assert(unlink(b) == 0 && mkdir(b, 0755) == 0);
	errno = 0;
	ck_assert(!outfile_group_end(true));
	ck_assert_int_eq(errno, EISDIR);
	back = util_read_file(a, NULL);
	ck_assert_str_eq(back, "a\n");
	free(back);
	back = util_read_file(old, NULL);
	ck_assert_str_eq(back, "old\n");
	free(back);
	ck_assert(!exists(dir, "c.txt"));
	ck_assert_int_eq(count_entries(dir), 3); /* a.txt, b.txt/, old.txt */
	ck_assert(rmdir(b) == 0 && unlink(old) == 0);
	ck_assert(outfile_write(b, "b\n", 2));
	/* SIGTERM in the middle of a group, in a process with another thread
	 * that takes it, and exit() in the middle of one: the process ends,
	 * leaving no temporary file and none of the group's in place */
	for (int how = 0; how < 2; how++) {
		fflush(NULL);
		pid_t pid = fork();
		ck_assert_int_ge(pid, 0);
		if (pid == 0) {
			pthread_t t;
			pthread_create(&t, NULL, idle_thread, NULL);
			outfile_group_begin(dir, 1);
			if (!outfile_write(c, "c\n", 2) || !outfile_write(a, "new\n", 4))
				_exit(9);
			if (how == 1)
				exit(3);
			pthread_create(&t, NULL, signal_thread, NULL);
			for (;;)
				pause();
		}
		int st;
		ck_assert_int_eq(waitpid(pid, &st, 0), pid);
		if (how == 0)
			ck_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
		else
			ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 3);
		ck_assert_int_eq(count_entries(dir), 2); /* a.txt and b.txt, no temporary, no c.txt */
		back = util_read_file(a, NULL);
		ck_assert_str_eq(back, "a\n");
		free(back);
	}
	ck_assert_int_eq(unlink(a), 0);
	ck_assert_int_eq(unlink(b), 0);
	ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

/* Every entry of dir, hidden ones too (.patc-pending, .patc-journal). */
static int all_entries(const char *dir)
{
	DIR *d = opendir(dir);
	int n = 0;
	for (struct dirent *e; (e = readdir(d));)
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return n;
}

static bool holds_text(const char *path, const char *text)
{
	char *back = util_read_file(path, NULL);
	const bool same = back && !strcmp(back, text);
	free(back);
	return same;
}

/* A run killed by the test hook before each step of its group's end (and
 * one that reaches the end: the loop's last): the next run into the
 * directory (a group begun and given up) leaves the old set whole where the
 * kill came before the journal, the new set whole after it, and neither a
 * temporary file nor a journal in either case. */
START_TEST(outfile_killed_at_each_step)
{
	signal(SIGTERM, SIG_DFL);
	char dir[] = "/tmp/patc-test-XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	char a[300], b[300], c[300], old[300];
	snprintf(a, sizeof a, "%s/a.txt", dir);
	snprintf(b, sizeof b, "%s/b.txt", dir);
	snprintf(c, sizeof c, "%s/c.txt", dir);
	snprintf(old, sizeof old, "%s/old.txt", dir);
	int n = 1;
	for (;; n++) {
		unlink(c);
		ck_assert(outfile_write(a, "old a\n", 6) && outfile_write(b, "old b\n", 6) &&
		          outfile_write(old, "old\n", 4));
		fflush(NULL);
		const pid_t pid = fork();
		ck_assert_int_ge(pid, 0);
		if (pid == 0) {
			char at[16];
			snprintf(at, sizeof at, "%d", n);
			setenv("PATC_TEST_KILL_AT", at, 1);
			if (!outfile_group_begin(dir, 1))
				_exit(9);
			outfile_group_remove(old);
			if (!outfile_write(a, "new a\n", 6) || !outfile_write(b, "new b\n", 6) ||
			    !outfile_write(c, "new c\n", 6))
				_exit(9);
			_exit(outfile_group_end(true) ? 0 : 9);
		}
		int st;
		ck_assert_int_eq(waitpid(pid, &st, 0), pid);
		const bool killed = WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL;
		ck_assert_msg(killed || (WIFEXITED(st) && WEXITSTATUS(st) == 0), "step %d", n);
		if (n <= 2) /* before the journal: the old set untouched */
			ck_assert(holds_text(a, "old a\n") && holds_text(b, "old b\n") && holds_text(old, "old\n"));
		ck_assert(outfile_group_begin(dir, 1)); /* (the next run) */
		ck_assert(outfile_group_end(false));
		ck_assert_int_eq(all_entries(dir), 3);
		if (n <= 2)
			ck_assert(holds_text(a, "old a\n") && holds_text(b, "old b\n") && holds_text(old, "old\n"));
		else
			ck_assert_msg(holds_text(a, "new a\n") && holds_text(b, "new b\n") && holds_text(c, "new c\n"),
			              "step %d", n);
		if (!killed)
			break;
	}
	ck_assert_int_eq(n, 8); /* links, journal, a removal, 3 renames, the journal removed; then none */
	ck_assert(unlink(a) == 0 && unlink(b) == 0 && unlink(c) == 0 && rmdir(dir) == 0);
}
END_TEST

/* Two groups into one directory: the second waits for the first's lock,
 * then gives up (EWOULDBLOCK); once the first is killed (SIGKILL: the
 * kernel drops its lock) the second gets it at once and removes the
 * temporary file the first left. */
START_TEST(outfile_directory_locked)
{
	signal(SIGTERM, SIG_DFL);
	char dir[] = "/tmp/patc-test-XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	char a[300];
	snprintf(a, sizeof a, "%s/a.txt", dir);
	int ready[2];
	ck_assert_int_eq(pipe(ready), 0);
	fflush(NULL);
	const pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		if (!outfile_group_begin(dir, 1) || !outfile_write(a, "first\n", 6) || write(ready[1], "x", 1) != 1)
			_exit(9);
		for (;;)
			pause();
	}
	char x;
	ck_assert_int_eq(read(ready[0], &x, 1), 1);
	ck_assert_int_eq(all_entries(dir), 2); /* its temporary file and its list */
	errno = 0;
	ck_assert(!outfile_group_begin(dir, 1));
	ck_assert_int_eq(errno, EWOULDBLOCK);
	kill(pid, SIGKILL);
	int st;
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_int_eq(all_entries(dir), 2);
	ck_assert(outfile_group_begin(dir, 1));
	ck_assert_int_eq(all_entries(dir), 0);
	ck_assert(outfile_write(a, "second\n", 7));
	ck_assert(outfile_group_end(true));
	ck_assert(holds_text(a, "second\n"));
	ck_assert_int_eq(all_entries(dir), 1);
	close(ready[0]);
	close(ready[1]);
	ck_assert(unlink(a) == 0 && rmdir(dir) == 0);
}
END_TEST

typedef struct PoolCheck {
	atomic_int count[POOL_MAX_THREADS];
	pthread_t caller;
	atomic_bool part0_elsewhere;
} PoolCheck;

static void pool_part(void *arg, int i)
{
	PoolCheck *c = arg;
	atomic_fetch_add(&c->count[i], 1);
	if (i == 0 && !pthread_equal(pthread_self(), c->caller))
		atomic_store(&c->part0_elsewhere, true);
}

/* Runs a job of n parts; true when each ran once and part 0 on the caller
 * (elsewhere: on a worker). */
static bool pool_job_ran(int n, bool elsewhere)
{
	static PoolCheck c;
	for (int i = 0; i < POOL_MAX_THREADS; i++)
		atomic_store(&c.count[i], 0);
	c.caller = pthread_self();
	atomic_store(&c.part0_elsewhere, false);
	pool_run(n, pool_part, &c);
	for (int i = 0; i < POOL_MAX_THREADS; i++)
		if (atomic_load(&c.count[i]) != (i < n))
			return false;
	return atomic_load(&c.part0_elsewhere) == elsewhere;
}

static bool pool_job_ok(int n) { return pool_job_ran(n, false); }

START_TEST(pool_parts_once)
{
	/* sizes up and down, back to back (workers spinning) and after a pause
	 * (workers asleep) */
	for (int round = 0; round < 300; round++) {
		int n = 1 + (round * 7) % 9;
		ck_assert_msg(pool_job_ok(n), "round %d, %d parts", round, n);
		if (round % 50 == 49)
			util_sleep(0.002);
	}
}
END_TEST

START_TEST(pool_after_fork)
{
	ck_assert(pool_job_ok(4)); /* the parent has workers now */
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		alarm(20); /* a child waiting on its parent's workers would hang */
		_exit(pool_job_ok(3) && pool_job_ok(5) ? 0 : 1);
	}
	int st = 0;
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	ck_assert(pool_job_ok(4));
}
END_TEST

/* A process whose stack limit is under a worker's runs no part on the
 * calling thread (a kernel's buffers may not fit there): every part on a
 * worker, one part too. */
START_TEST(pool_small_stack)
{
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		alarm(20);
		struct rlimit r;
		if (getrlimit(RLIMIT_STACK, &r) != 0)
			_exit(2);
		r.rlim_cur = 512 << 10;
		if (setrlimit(RLIMIT_STACK, &r) != 0)
			_exit(2);
		_exit(pool_job_ran(1, true) && pool_job_ran(3, true) && pool_job_ran(8, true) ? 0 : 1);
	}
	int st = 0;
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}
END_TEST

static Suite *support_suite(void)
{
	Suite *s = suite_create("support");
	TCase *tc = tcase_create("support");
	tcase_add_test(tc, arena_zeroed_aligned);
	tcase_add_test(tc, strbuf_grows);
	tcase_add_test(tc, atomic_write);
	tcase_add_test(tc, getline_bounded);
	tcase_add_test(tc, measured_memory);
	tcase_add_test(tc, outfile_groups);
	tcase_add_test(tc, outfile_killed_at_each_step);
	tcase_add_test(tc, outfile_directory_locked);
	tcase_add_test(tc, pool_parts_once);
	tcase_add_test(tc, pool_after_fork);
	tcase_add_test(tc, pool_small_stack);
	suite_add_tcase(s, tc);
	return s;
}

int main(void) { return run_suite(support_suite()); }
