/* SPDX-License-Identifier: MIT */
/* outfile.c - temporary output files, removed on interruption, renamed
 * into place alone or as a group; see outfile.h. */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE /* (flock, realpath) */
#include "outfile.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct Entry {
	char *tmp, *path;
	bool finished; /* written, waiting for the group's end */
	bool remove;   /* not a temporary file: path to remove at the group's end */
	pid_t pid;     /* the process that made it (a forked child's are not its parent's) */
} Entry;

/* The entries, read by the signal handler: changed only with the signals
 * held off (hold/release). */
static Entry *entries;
static volatile int nentries;
static int cap;
static bool grouped;

/* The group's directory (outfile_group_begin): its descriptor, whose
 * flock() is the lock of the directory's outputs (the kernel's, so that a
 * run that dies for any reason holds it no more), or -1; its device and
 * inode, to know the files in it; the process that holds it (a forked
 * child's files are not listed).  In it, while the group runs, PENDING
 * lists the temporary files made there (names, each ended by a NUL,
 * written before the file exists), and at its end JOURNAL the removals and
 * renames to come (written whole, then renamed into place, before the
 * first): what a run killed on the way leaves, the next one under the lock
 * finds. */
#define PENDING ".patc-pending"
#define JOURNAL ".patc-journal"
#define JOURNAL_NEW ".patc-journal.new"
#define JOURNAL_MAGIC "patc journal 1"
static volatile int dir_fd = -1;
static volatile int pending_fd = -1;
static volatile pid_t dir_pid;
static dev_t dir_dev;
static ino_t dir_ino;

static const int caught[] = {SIGINT, SIGTERM, SIGHUP};
enum { NCAUGHT = sizeof caught / sizeof caught[0] };
/* The thread that writes the files (outfile.h: one), of process
 * writer_pid.  Holding the signals off holds them for it alone, and a
 * signal sent to the process may land on any thread that does not hold it
 * (OpenBLAS's, the x86 pool's): there the handler only passes it on to
 * this thread, where it waits while held. */
static pthread_t writer;
static volatile pid_t writer_pid;
/* The child of outfile_spawn_wait while it runs (its process group's id),
 * or 0. */
static volatile pid_t spawned;

extern char **environ;

/* The spawned child's group ended with sig, the child waited for: a
 * second to end as sig would have it (a compiler driver removes its own
 * temporary files), then SIGKILL. */
static void end_spawned(int sig)
{
	const pid_t c = spawned;
	if (c <= 0)
		return;
	kill(-c, sig);
	const struct timespec tick = {0, 10 * 1000 * 1000};
	pid_t r = 0;
	for (int i = 0; i < 100 && (r = waitpid(c, NULL, WNOHANG)) == 0; i++)
		nanosleep(&tick, NULL);
	kill(-c, SIGKILL); /* (what it started lives on in its group) */
	if (r == 0)
		waitpid(c, NULL, 0);
}

/* The files of this process removed, then the signal's own action. */
static void on_signal(int sig)
{
	const pid_t me = getpid();
	if (me == writer_pid && !pthread_equal(pthread_self(), writer)) {
		pthread_kill(writer, sig);
		return;
	}
	if (me == writer_pid)
		end_spawned(sig);
	for (int i = 0; i < nentries; i++)
		if (!entries[i].remove && entries[i].pid == me)
			unlink(entries[i].tmp);
	if (dir_fd >= 0 && pending_fd >= 0 && dir_pid == me)
		unlinkat(dir_fd, PENDING, 0);
	struct sigaction dfl;
	memset(&dfl, 0, sizeof dfl);
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	sigaction(sig, &dfl, NULL);
	raise(sig);
}

/* At exit() (util_oom, util_ice), the files not yet in place. */
static void at_exit(void)
{
	for (int i = 0; i < nentries; i++)
		if (!entries[i].remove && entries[i].pid == getpid())
			unlink(entries[i].tmp);
	if (dir_fd >= 0 && pending_fd >= 0 && dir_pid == getpid())
		unlinkat(dir_fd, PENDING, 0);
}

/* The handlers, once, for the signals whose action is the default one (a
 * signal ignored, as under nohup, stays ignored). */
static void install(void)
{
	static bool done;
	if (done)
		return;
	done = true;
	atexit(at_exit);
	for (int i = 0; i < NCAUGHT; i++) {
		struct sigaction old, sa;
		if (sigaction(caught[i], NULL, &old) != 0 || old.sa_handler != SIG_DFL)
			continue;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = on_signal;
		sa.sa_flags = SA_NODEFER; /* (the default action restored by the handler itself) */
		sigemptyset(&sa.sa_mask);
		sigaction(caught[i], &sa, NULL);
	}
}

static void hold(sigset_t *old)
{
	sigset_t set;
	sigemptyset(&set);
	for (int i = 0; i < NCAUGHT; i++)
		sigaddset(&set, caught[i]);
	sigprocmask(SIG_BLOCK, &set, old);
}

static void release(const sigset_t *old) { sigprocmask(SIG_SETMASK, old, NULL); }

static char *dup_or_die(const char *s)
{
	char *d = strdup(s);
	if (!d)
		util_oom();
	return d;
}

static void add(const char *tmp, const char *path, bool remove)
{
	install();
	/* (made before the signals are held: util_oom may exit) */
	char *t = tmp ? dup_or_die(tmp) : NULL, *p = dup_or_die(path);
	Entry *grown = entries;
	if (nentries == cap) {
		grown = malloc((size_t)(cap ? 2 * cap : 8) * sizeof *grown);
		if (!grown)
			util_oom();
		if (nentries)
			memcpy(grown, entries, (size_t)nentries * sizeof *grown);
	}
	sigset_t old;
	hold(&old);
	Entry *was = entries;
	if (grown != entries) {
		entries = grown;
		cap = cap ? 2 * cap : 8;
	}
	entries[nentries] = (Entry){t, p, false, remove, getpid()};
	nentries++;
	if (writer_pid != getpid()) /* (the first file, or a forked child's) */
		writer = pthread_self(), writer_pid = getpid();
	release(&old);
	if (was != grown)
		free(was);
}

static int find(const char *tmp)
{
	for (int i = 0; i < nentries; i++)
		if (!entries[i].remove && !strcmp(entries[i].tmp, tmp))
			return i;
	return -1;
}

/* Entry i out of the list (the signals held off by the caller). */
static void take_out(int i)
{
	free(entries[i].tmp);
	free(entries[i].path);
	memmove(&entries[i], &entries[i + 1], (size_t)(nentries - i - 1) * sizeof *entries);
	nentries--;
}


/* The name under which path is listed in PENDING or JOURNAL: its last
 * part where it is in the group's directory, else an absolute path (a
 * file that a symbolic link leads elsewhere); NULL where none can be made.
 * Allocated. */
static char *listed_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	char *dir = slash ? strndup(path, (size_t)(slash - path) + (slash == path)) : strdup(".");
	if (!dir)
		return NULL;
	struct stat st;
	char *name = NULL;
	if (stat(dir, &st) == 0 && st.st_dev == dir_dev && st.st_ino == dir_ino) {
		name = strdup(base);
	} else {
		char *abs = realpath(dir, NULL);
		if (abs && (name = malloc(strlen(abs) + strlen(base) + 2)))
			sprintf(name, "%s/%s", strcmp(abs, "/") ? abs : "", base);
		free(abs);
	}
	free(dir);
	return name;
}

/* Whether name (as listed) is one of patc's temporary files: NAME.tmp.
 * and six letters or digits, as made below. */
static bool temp_name(const char *name)
{
	const char *base = strrchr(name, '/');
	base = base ? base + 1 : name;
	const size_t n = strlen(base);
	if (n < 12 || base[0] == '.' || strncmp(base + n - 11, ".tmp.", 5) != 0)
		return false;
	for (size_t i = n - 6; i < n; i++)
		if (!(base[i] >= 'a' && base[i] <= 'z') && !(base[i] >= 'A' && base[i] <= 'Z') &&
		    !(base[i] >= '0' && base[i] <= '9'))
			return false;
	return true;
}

/* Inside a group with its directory locked: name listed in PENDING (made
 * at the first), before the file exists.  false with errno set. */
static bool list_pending(const char *tmp)
{
	if (dir_fd < 0 || dir_pid != getpid())
		return true;
	char *name = listed_name(tmp);
	if (!name)
		return false;
	if (pending_fd < 0)
		pending_fd = openat(dir_fd, PENDING, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	const size_t n = strlen(name) + 1;
	const bool ok = pending_fd >= 0 && write(pending_fd, name, n) == (ssize_t)n;
	const int err = errno;
	free(name);
	errno = err;
	return ok;
}

/* mkstemp(tmp), the name listed in PENDING before the file is made (a run
 * killed between the two leaves no file the next run does not know). */
static int make_temp(char *tmp)
{
	static const char letters[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
	static uint64_t state;
	const size_t n = strlen(tmp);
	if (n < 6 || strcmp(tmp + n - 6, "XXXXXX") != 0) {
		errno = EINVAL;
		return -1;
	}
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	state ^= (uint64_t)now.tv_nsec ^ (uint64_t)now.tv_sec << 30 ^ (uint64_t)getpid() << 40;
	for (int tries = 0; tries < 100; tries++) {
		uint64_t z = (state += 0x9E3779B97F4A7C15u); /* (splitmix64) */
		z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
		z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
		z ^= z >> 31;
		for (int i = 0; i < 6; i++, z /= 62)
			tmp[n - 6 + (size_t)i] = letters[z % 62];
		if (!list_pending(tmp))
			return -1;
		const int fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd >= 0 || errno != EEXIST)
			return fd;
	}
	errno = EEXIST;
	return -1;
}

/* The whole of the file name in dfd (at most 64 MiB), or NULL; only one of
 * this user's (another who may write into the directory cannot make a run
 * remove what the list names). */
static char *read_at(int dfd, const char *name, size_t *len)
{
	const int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return NULL;
	struct stat st;
	char *data = NULL;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() && st.st_size < (64 << 20) &&
	    (data = malloc((size_t)st.st_size + 1))) {
		size_t got = 0;
		ssize_t r;
		while (got < (size_t)st.st_size && (r = read(fd, data + got, (size_t)st.st_size - got)) > 0)
			got += (size_t)r;
		data[got] = 0;
		*len = got;
	}
	close(fd);
	return data;
}

/* The group's directory unlocked, its PENDING removed (what it listed is
 * gone: renamed into place or removed by the caller). */
static void unlock_dir(void)
{
	if (dir_fd < 0)
		return;
	sigset_t old;
	hold(&old);
	if (pending_fd >= 0) {
		close(pending_fd);
		unlinkat(dir_fd, PENDING, 0);
		pending_fd = -1;
	}
	close(dir_fd); /* (the lock with it) */
	dir_fd = -1;
	release(&old);
}

/* A listed name's directory and name for the *at calls. */
static int at_dir(const char *name) { return strchr(name, '/') ? AT_FDCWD : dir_fd; }

/* What a run killed inside its group left in the locked directory: a
 * journal (written whole: the renames had begun) rolled forward, the
 * renames whose temporary file is still there done and the removals
 * redone, so that its new set is whole; then the temporary files it
 * listed removed (the new set's done, an unfinished run's files, links
 * kept for a rollback).  false with errno where the journal could not be
 * completed (it stays, for the next run). */
static bool recover(const char *dir)
{
	size_t len = 0;
	char *j = read_at(dir_fd, JOURNAL, &len);
	const size_t magic = sizeof JOURNAL_MAGIC;
	if (j && len >= magic + 4 && !memcmp(j, JOURNAL_MAGIC, magic) && !memcmp(j + len - 4, "end", 4)) {
		int err = 0;
		const char *end = j + len - 4;
		for (const char *r = j + magic; !err && r < end;) {
			const char *a = r + 2, *b = a + strlen(a) + 1;
			if (a >= end || (r[0] == 'R' && b >= end))
				break; /* (not one patc wrote) */
			if (r[0] == 'D' && unlinkat(at_dir(a), a, 0) != 0 && errno != ENOENT)
				err = errno;
			if (r[0] == 'R' && renameat(at_dir(a), a, at_dir(b), b) != 0 && errno != ENOENT)
				err = errno;
			r = r[0] == 'R' ? b + strlen(b) + 1 : b;
		}
		free(j);
		if (err) {
			errno = err;
			return false;
		}
		fsync(dir_fd);
		unlinkat(dir_fd, JOURNAL, 0);
		fprintf(stderr, "patc: note: '%s': completed the set of outputs that a run killed while it put them in "
		                "place left there\n", dir);
	} else {
		free(j);
		unlinkat(dir_fd, JOURNAL, 0); /* (none, or one not whole: never renamed into place by patc) */
	}
	unlinkat(dir_fd, JOURNAL_NEW, 0);
	char *p = read_at(dir_fd, PENDING, &len);
	int removed = 0;
	for (const char *r = p; r && r < p + len; r += strlen(r) + 1)
		if (temp_name(r))
			removed += unlinkat(at_dir(r), r, 0) == 0;
	free(p);
	unlinkat(dir_fd, PENDING, 0);
	if (removed)
		fprintf(stderr, "patc: note: '%s': removed %d temporary file%s of a run that was killed\n", dir, removed,
		        removed == 1 ? "" : "s");
	return true;
}

/* The test hook of outfile.h: before step n of a group's end,
 * PATC_TEST_KILL_AT=n raises SIGKILL, PATC_TEST_KILL_AT=n:stop SIGSTOP. */
static void test_step(int n)
{
	const char *at = getenv("PATC_TEST_KILL_AT");
	char *end;
	if (!at || strtol(at, &end, 10) != n)
		return;
	raise(!strcmp(end, ":stop") ? SIGSTOP : SIGKILL);
}

/* A group's entry at its end: whether its path held a file, a link to that
 * file (NULL: none, or no link could be made), whether its removal or
 * rename is done. */
typedef struct Step {
	int entry;
	bool existed, applied;
	char *backup;
} Step;

/* JOURNAL written whole beside the group's files, then renamed into place
 * and made durable: the group's removals and renames (steps, in order). */
static bool write_journal(const Step *steps, int nsteps);

int outfile_mkstemp(char *tmp, const char *path)
{
	install();
	sigset_t old;
	hold(&old); /* (no moment where the file exists untracked) */
	const int fd = grouped && dir_fd >= 0 ? make_temp(tmp) : mkstemp(tmp);
	const int err = errno;
	if (fd >= 0)
		add(tmp, path, false);
	release(&old);
	errno = err;
	return fd;
}

bool outfile_finish(const char *tmp)
{
	const int i = find(tmp);
	PATC_ASSERT(i >= 0);
	if (grouped) {
		entries[i].finished = true;
		return true;
	}
	sigset_t old;
	hold(&old);
	const bool ok = rename(tmp, entries[i].path) == 0;
	const int err = errno;
	if (!ok)
		unlink(tmp);
	take_out(i);
	release(&old);
	errno = err;
	return ok;
}

void outfile_drop(const char *tmp)
{
	const int i = find(tmp);
	PATC_ASSERT(i >= 0);
	sigset_t old;
	hold(&old);
	unlink(tmp);
	take_out(i);
	release(&old);
}

bool outfile_group_begin(const char *dir, int wait_s)
{
	PATC_ASSERT(!grouped);
	install();
	const int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0) {
		const int err = errno;
		if (fd >= 0)
			close(fd);
		errno = err;
		return false;
	}
	struct timespec start, now;
	clock_gettime(CLOCK_MONOTONIC, &start);
	const struct timespec tick = {0, 50 * 1000 * 1000};
	for (bool said = false;;) {
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			break;
		if (errno == EINTR)
			continue;
		if (errno != EWOULDBLOCK) { /* a file system without locks: the group as before, unlocked */
			close(fd);
			grouped = true;
			return true;
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - start.tv_sec + (now.tv_nsec - start.tv_nsec) / 1e9 >= wait_s) {
			close(fd);
			errno = EWOULDBLOCK;
			return false;
		}
		if (!said)
			fprintf(stderr, "patc: waiting for another patc run writing into '%s' to finish (up to %d s)\n", dir,
			        wait_s);
		said = true;
		nanosleep(&tick, NULL);
	}
	sigset_t old;
	hold(&old);
	dir_fd = fd;
	dir_dev = st.st_dev, dir_ino = st.st_ino;
	dir_pid = getpid();
	pending_fd = -1;
	release(&old);
	if (!recover(dir)) {
		const int err = errno;
		unlock_dir();
		errno = err;
		return false;
	}
	grouped = true;
	return true;
}

void outfile_group_remove(const char *path)
{
	PATC_ASSERT(grouped);
	add(NULL, path, true);
}

const char *outfile_pending(const char *path)
{
	for (int i = 0; grouped && i < nentries; i++)
		if (!entries[i].remove && entries[i].finished && !strcmp(entries[i].path, path))
			return entries[i].tmp;
	return NULL;
}

/* A hard link to path's file under a new name beside it (as temporary
 * files are named), into backup; false where path does not exist or the
 * link cannot be made (a file system without them). */
static bool back_up(const char *path, char *backup, size_t size)
{
	if ((size_t)snprintf(backup, size, "%s.tmp.XXXXXX", path) >= size)
		return false;
	const int fd = dir_fd >= 0 ? make_temp(backup) : mkstemp(backup); /* (a name of our own, then the link) */
	if (fd < 0)
		return false;
	close(fd);
	unlink(backup);
	return link(path, backup) == 0;
}

bool outfile_group_end(bool commit)
{
	PATC_ASSERT(grouped);
	grouped = false;
	sigset_t old;
	hold(&old);
	int err = 0;
	Step *steps = NULL;
	int nsteps = 0;
	for (int i = 0; i < nentries; i++)
		nsteps += entries[i].remove || entries[i].finished;
	if (commit && nsteps && !(steps = calloc((size_t)nsteps, sizeof *steps)))
		err = ENOMEM;
	int at = 1; /* (the test hook's steps) */
	if (commit && !err)
		test_step(at++);
	for (int i = 0, j = 0; commit && !err && i < nentries; i++) {
		const Entry *e = &entries[i];
		if (!e->remove && !e->finished)
			continue;
		Step *t = &steps[j++];
		t->entry = i;
		struct stat st;
		t->existed = lstat(e->path, &st) == 0;
		char backup[4096];
		if (t->existed && back_up(e->path, backup, sizeof backup) && !(t->backup = strdup(backup))) {
			unlink(backup);
			err = ENOMEM;
		}
	}
	/* the journal, then the earlier set's files not written again, then
	 * the renames in order */
	if (commit && !err)
		test_step(at++);
	const bool journal = commit && !err && nsteps && dir_fd >= 0;
	if (journal && !write_journal(steps, nsteps))
		err = errno;
	for (int j = 0; commit && !err && j < nsteps; j++) {
		const Entry *e = &entries[steps[j].entry];
		if (e->remove)
			test_step(at++);
		if (e->remove && unlink(e->path) != 0 && errno != ENOENT)
			err = errno;
		steps[j].applied = e->remove && !err;
	}
	for (int j = 0; commit && !err && j < nsteps; j++) {
		const Entry *e = &entries[steps[j].entry];
		if (!e->remove)
			test_step(at++);
		if (!e->remove && rename(e->tmp, e->path) != 0)
			err = errno;
		else if (!e->remove)
			steps[j].applied = true;
	}
	if (commit && !err)
		test_step(at++);
	if (journal) /* (before a rollback too: the next run must not roll forward what it undid) */
		unlinkat(dir_fd, JOURNAL, 0);
	/* a failure puts back what was there: a file replaced or removed from
	 * its link, a file that was not there removed (one replaced where no
	 * link could be made stays: the one before is gone) */
	for (int j = 0; err && j < nsteps; j++) {
		Step *t = &steps[j];
		if (!t->applied)
			continue;
		if (t->backup && rename(t->backup, entries[t->entry].path) == 0) {
			free(t->backup);
			t->backup = NULL;
		} else if (!t->existed)
			unlink(entries[t->entry].path);
	}
	for (int j = 0; steps && j < nsteps; j++)
		if (steps[j].backup) {
			unlink(steps[j].backup);
			free(steps[j].backup);
		}
	free(steps);
	for (int i = 0; i < nentries;) {
		Entry *e = &entries[i];
		if (!e->remove && !e->finished) { /* still being written: not the group's */
			i++;
			continue;
		}
		if (!e->remove && (!commit || err))
			unlink(e->tmp); /* (gone already where it was renamed) */
		take_out(i);
	}
	unlock_dir();
	release(&old);
	errno = err;
	return !commit || !err;
}

static bool write_journal(const Step *steps, int nsteps)
{
	StrBuf sb;
	sb_init(&sb);
	sb_puts(&sb, JOURNAL_MAGIC);
	sb_putc(&sb, 0);
	bool ok = true;
	for (int j = 0; ok && j < nsteps; j++) {
		const Entry *e = &entries[steps[j].entry];
		char *a = listed_name(e->remove ? e->path : e->tmp), *b = e->remove ? NULL : listed_name(e->path);
		ok = a && (e->remove || b);
		if (ok) {
			sb_puts(&sb, e->remove ? "D" : "R");
			sb_putc(&sb, 0);
			sb_puts(&sb, a);
			sb_putc(&sb, 0);
			if (b) {
				sb_puts(&sb, b);
				sb_putc(&sb, 0);
			}
		}
		free(a);
		free(b);
	}
	sb_puts(&sb, "end");
	sb_putc(&sb, 0);
	int fd = -1;
	if (ok)
		fd = openat(dir_fd, JOURNAL_NEW, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	ok = fd >= 0;
	for (size_t done = 0; ok && done < sb.len;) {
		const ssize_t n = write(fd, sb.data + done, sb.len - done);
		ok = n > 0 || (n < 0 && errno == EINTR);
		done += n > 0 ? (size_t)n : 0;
	}
	ok = ok && fsync(fd) == 0;
	int err = errno;
	if (fd >= 0 && close(fd) != 0 && ok)
		ok = false, err = errno;
	ok = ok && renameat(dir_fd, JOURNAL_NEW, dir_fd, JOURNAL) == 0 && fsync(dir_fd) == 0;
	if (!ok) {
		err = errno;
		unlinkat(dir_fd, JOURNAL_NEW, 0);
		unlinkat(dir_fd, JOURNAL, 0);
	}
	sb_free(&sb);
	errno = err;
	return ok;
}

/* fd moved past stderr, close-on-exec (a pipe made while stdout or stderr
 * is closed may take its number); -1 on failure. */
static int above_stdio(int fd)
{
	if (fd < 0)
		return -1;
	const int moved = fcntl(fd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
	close(fd);
	return moved;
}

/* What the child pid writes to the pipe from, passed on to our stderr
 * until it exits: not until every holder of the pipe closes it, as what
 * the child leaves running may hold it for good.  0 with *status, or -1
 * with errno where waitpid failed. */
static int relay_wait(pid_t pid, int from, int *status)
{
	char buf[4096];
	bool open = true;
	for (;;) {
		struct pollfd p = {from, POLLIN, 0};
		if (open && poll(&p, 1, 100) > 0) {
			const ssize_t n = read(from, buf, sizeof buf);
			if (n > 0 && write(STDERR_FILENO, buf, (size_t)n) < 0) { /* (its words lost, not the link) */
			}
			if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
				open = false;
			continue;
		}
		const pid_t w = waitpid(pid, status, open ? WNOHANG : 0);
		if (w == pid)
			break;
		if (w < 0 && errno != EINTR)
			return -1;
	}
	if (open && fcntl(from, F_SETFL, O_NONBLOCK) == 0) { /* what it wrote before it ended */
		ssize_t n;
		while ((n = read(from, buf, sizeof buf)) > 0)
			if (write(STDERR_FILENO, buf, (size_t)n) < 0)
				break;
	}
	return 0;
}

int outfile_spawn_wait(char *const argv[])
{
	install();
	int fds[2];
	if (pipe(fds) != 0)
		return -1;
	const int from = above_stdio(fds[0]), to = above_stdio(fds[1]);
	if (from < 0 || to < 0) {
		const int e = errno;
		if (from >= 0)
			close(from);
		if (to >= 0)
			close(to);
		errno = e;
		return -1;
	}
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	if (posix_spawn_file_actions_init(&fa) != 0 || posix_spawnattr_init(&at) != 0)
		util_oom();
	posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, to, STDOUT_FILENO);
	posix_spawn_file_actions_adddup2(&fa, to, STDERR_FILENO);
	sigset_t old;
	hold(&old); /* (no moment where the child runs unknown to the handler) */
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);
	posix_spawnattr_setpgroup(&at, 0);
	posix_spawnattr_setsigmask(&at, &old);
	pid_t pid;
	const int e = posix_spawnp(&pid, argv[0], &fa, &at, argv, environ);
	posix_spawnattr_destroy(&at);
	posix_spawn_file_actions_destroy(&fa);
	if (e == 0)
		spawned = pid;
	release(&old);
	close(to);
	if (e != 0) {
		close(from);
		errno = e;
		return -1;
	}
	int status;
	const int rc = relay_wait(pid, from, &status);
	const int err = errno;
	close(from);
	hold(&old);
	spawned = 0;
	release(&old);
	errno = err;
	return rc < 0 ? -1 : WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Writes all of data to fd; false with errno set. */
static bool write_all(int fd, const char *data, size_t len)
{
	size_t off = 0;
	while (off < len) {
		ssize_t w = write(fd, data + off, len - off);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return false;
		}
		off += (size_t)w;
	}
	return true;
}

/* outfile_write's temporary file for path, renamed over it. */
static bool write_renamed(const char *path, const char *data, size_t len)
{
	/* path.tmp.XXXXXX, its name cut where the suffix would take it past
	 * the longest name a directory holds (a name of 250 bytes is valid) */
	size_t n = strlen(path);
	const char *slash = strrchr(path, '/');
	const size_t name = n - (size_t)(slash ? slash + 1 - path : 0);
	if (name > 255 - 11)
		n -= name - (255 - 11);
	char *tmp = malloc(n + 16);
	if (!tmp)
		util_oom();
	memcpy(tmp, path, n);
	memcpy(tmp + n, ".tmp.XXXXXX", 12);
	int fd = outfile_mkstemp(tmp, path);
	if (fd < 0) {
		free(tmp);
		return false;
	}
	if (!write_all(fd, data, len))
		goto fail;
	/* The mode of the file replaced, else what a new file would get. */
	struct stat old;
	mode_t mode;
	if (stat(path, &old) == 0) {
		mode = old.st_mode & 07777;
	} else {
		mode_t mask = umask(0);
		umask(mask);
		mode = 0666 & ~mask;
	}
	if (fchmod(fd, mode) != 0 || fsync(fd) != 0)
		goto fail;
	if (close(fd) != 0) {
		fd = -1;
		goto fail;
	}
	/* renamed now, or with its group (outfile.h) */
	bool ok = outfile_finish(tmp);
	free(tmp);
	return ok;
fail:;
	int err = errno;
	if (fd >= 0)
		close(fd);
	outfile_drop(tmp);
	free(tmp);
	errno = err;
	return false;
}

bool outfile_write(const char *path, const char *data, size_t len)
{
	/* A device or a pipe (/dev/null, /dev/stdout, a FIFO) is written in
	 * place: renaming a file over it would replace the device. */
	bool in_place;
	char *target = util_output_target(path, &in_place);
	if (!target)
		return false;
	if (!in_place) {
		const bool ok = write_renamed(target, data, len);
		const int err = errno;
		free(target);
		errno = err;
		return ok;
	}
	free(target);
	struct stat st;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		errno = EISDIR;
		return false;
	}
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0666);
	if (fd < 0)
		return false;
	bool ok = write_all(fd, data, len);
	int err = errno;
	if (close(fd) != 0 && ok)
		return false;
	errno = err;
	return ok;
}
