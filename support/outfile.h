/* SPDX-License-Identifier: MIT */
/* outfile.h - output files written under a temporary name beside their
 * path, then renamed into place.
 *
 * While a temporary file exists it is tracked, and SIGINT, SIGTERM or
 * SIGHUP removes it before the process ends (nothing can for SIGKILL), as
 * does exit() (util_oom, util_ice).  Inside a group the files
 * finished are not renamed one by one but together at its end, with
 * signals held off, so that a set of outputs that belong together (a
 * kernel's object, header and weights; a search's reports beside its
 * kernel) replaces the set before it as one: a failure or an interruption
 * before the end leaves the earlier set whole (only a rename that fails
 * part way through the end, which the directory's writes before make
 * unlikely, leaves it mixed), and a SIGKILL leaves it for the next run
 * into the directory to make whole (outfile_group_begin).  outfile_write uses this; so does
 * every other writer of a temporary file in patc.  For one thread, the one
 * that first writes a file: other threads write none (a signal that lands
 * on one of them is passed on to it).
 */
#ifndef PATC_OUTFILE_H
#define PATC_OUTFILE_H

#include <stdbool.h>
#include <stddef.h>

/* mkstemp(tmp) for path, the file tracked from the moment it exists: its
 * descriptor, or -1 with errno set. */
int outfile_mkstemp(char *tmp, const char *path);
/* tmp is written: renamed to its path now, or at the group's end inside a
 * group.  false with errno set where the rename fails (tmp removed). */
bool outfile_finish(const char *tmp);
/* tmp is abandoned: removed and no longer tracked. */
void outfile_drop(const char *tmp);

/* How long a run waits for another that writes into the same directory. */
enum { OUTFILE_WAIT_S = 300 };

/* Starts a group (groups do not nest) whose files go into the directory
 * dir, and locks it: flock() on the directory's own descriptor, which
 * leaves no file behind and which the kernel releases when the process
 * ends, however (SIGKILL too).  Where another process holds the lock,
 * says so on stderr and waits for it up to wait_s seconds; then false
 * with errno EWOULDBLOCK, no group begun.  With the lock, what a run
 * killed inside its group left there is dealt with first (a note on
 * stderr): where it had begun its renames (its journal, .patc-journal,
 * written whole before the first), they are completed, so that its new
 * set is whole; the temporary files it had made there (listed in
 * .patc-pending before each was made) are removed.  false with errno
 * where the directory cannot be opened or that journal completed (it
 * stays for the next run).  A file system without flock() gets the group
 * unlocked, as before.
 *
 * Test hook: the environment variable PATC_TEST_KILL_AT=N makes
 * outfile_group_end(true) raise SIGKILL before its Nth step (1: the links
 * kept for a rollback made; 2: the journal written; then each removal,
 * then each rename, in order; last: the journal removed), and
 * PATC_TEST_KILL_AT=N:stop SIGSTOP there; for tests only. */
bool outfile_group_begin(const char *dir, int wait_s);
/* At the group's end, path (a file of the set before that this one does not
 * write again) is removed before the renames. */
void outfile_group_remove(const char *path);
/* Inside a group, the temporary file finished for path (its final name:
 * where links lead, as util_output_target gives it) and waiting for the
 * group's end, or NULL: a tool that reads the set (the linker of
 * --emit=so) reads it there, before it is in place.  Valid until the
 * group's end. */
const char *outfile_pending(const char *path);
/* Ends the group: with commit, removes the paths named and renames the
 * files finished in the order they were finished; false with errno set
 * where one could not be renamed or removed, and then what the group
 * replaced or removed is put back as it was, from hard links made before
 * (a file system without them keeps the files replaced), what it added is
 * removed, and so are the files not renamed.  Without commit (a failure),
 * removes the files finished. */
bool outfile_group_end(bool commit);

/* Runs argv (posix_spawnp) to write tracked files (a linker's output), in
 * a process group of its own: a signal that removes the files ends that
 * group first (the signal, then SIGKILL after a second) and waits for it,
 * so that nothing it runs writes them again.  That group is in a
 * terminal's background, where writing to the terminal under `stty
 * tostop` or reading from it would stop it for good: its stdin is
 * /dev/null and what it writes to stdout or stderr comes to our stderr
 * through a pipe.  Its exit status, 128 + the signal that ended it, or -1
 * with errno set where it did not start. */
int outfile_spawn_wait(char *const argv[]);

/* Writes data to path atomically: a temporary file in the directory of
 * util_output_target's path, fsync, then rename, keeping the mode of a file
 * it replaces.  On failure nothing is left behind at path or beside it;
 * returns false with errno set.  Where util_output_target says in place,
 * path is opened and written as it is (EISDIR for a directory). */
bool outfile_write(const char *path, const char *data, size_t len);

#endif
