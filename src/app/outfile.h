/* Files that appear whole or not at all, and never at the cost of what was
 * there before.
 *
 * A regular file (or a name not there yet) is written as a file of its own
 * and renamed into place by lbk_outfile_commit: all of a commit's files, or
 * none of them (a failed rename puts every previous version back). Written
 * by this process alone, it is an unnamed file in the target directory
 * (O_TMPFILE), which vanishes with the process however it ends, kill -9
 * included, and gets a name only at the commit; where other ranks write
 * into it too (or the file system has no unnamed files) it is a partial file
 * NAME.XXXXXX.lbknn-partial, unique per run and created exclusively, so two
 * runs writing the same name never share one. Anything else that exists
 * under the name (a FIFO, a device such as /dev/null, the terminal, or the
 * very file this process's stdout or stderr writes to) is written in place,
 * in order, and never renamed over or removed. On SIGINT, SIGTERM, SIGHUP,
 * SIGPIPE or SIGXCPU the partial files this process created are removed
 * before it dies of the signal. */
#ifndef LBK_OUTFILE_H
#define LBK_OUTFILE_H

#include "bounds.h"
#include "status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct stat;

/* Most files one commit takes (every output of a run, or of `generate`). */
#define LBK_OUTFILE_MAX 8

typedef struct {
    char path[LBK_PATH_MAX + 32]; /* where it goes */
    char temp[LBK_PATH_MAX + 64]; /* its partial file; "" when unnamed, direct or done */
    char fd_path[32];             /* unnamed: /proc/self/fd/N, its only name */
    int fd;                       /* -1 when closed (an unnamed file stays open) */
    bool unnamed;                 /* O_TMPFILE, named at the commit */
    bool direct;                  /* written in place (not a regular file) */
    bool kept;                    /* lbk_outfile_create_kept's: joined for reading too */
    uint64_t written;             /* direct: bytes written so far */
} lbk_outfile;

/* Creator: the partial file for path (or path itself when direct), open for
 * writing. `what` names it in messages ("output.neighbors"). shared: other
 * processes will write into it too (lbk_outfile_join), which only a
 * regular file on a shared file system allows. */
lbk_status lbk_outfile_create(lbk_outfile *f, const char *path, const char *what, bool shared);
/* The same, always as a named partial file (or path itself), for a writer
 * that opens it by a name it resolves: libhdf5 takes the real path of the
 * name, which an unnamed file's /proc/self/fd link does not have. A name
 * that exists as something other than a regular file is refused. */
lbk_status lbk_outfile_create_named(lbk_outfile *f, const char *path, const char *what);
/* True when this process's stdout or stderr writes to the file at sb: it is
 * written through that stream, in place, never replaced. */
bool lbk_outfile_is_own_stream(const struct stat *sb);
/* Checkpoints (checkpoint.h): the partial file under the fixed name
 * PATH.lbknn-partial, which outlives the process (signals, kill -9) until
 * the commit renames it; cut to `keep` bytes (0: a fresh run's, empty;
 * LBK_OUTFILE_KEEP_LENGTH: left as it is, for a file whose ranks each
 * write their own region of it). */
#define LBK_OUTFILE_KEEP_LENGTH UINT64_MAX
lbk_status lbk_outfile_create_kept(lbk_outfile *f, const char *path, const char *what,
                                   uint64_t keep);
/* The fixed partial name of path (lbk_outfile_create_kept's). */
void lbk_outfile_kept_name(const char *path, char *buf, size_t size);
/* Another rank: open the partial file the creator made (f as the creator
 * filled it, received by broadcast); a kept one for reading too (its
 * checkpoint CRCs). */
lbk_status lbk_outfile_join(lbk_outfile *f);
/* len bytes at offset. A direct file takes them in order only. */
lbk_status lbk_outfile_write_at(lbk_outfile *f, uint64_t offset, const void *data, size_t len);
/* Where a writer that opens files by name writes (the partial or the path). */
const char *lbk_outfile_write_path(const lbk_outfile *f);
/* Close, reporting write-back errors. An unnamed file stays open until
 * the commit (its descriptor is all that keeps it). */
lbk_status lbk_outfile_close(lbk_outfile *f);
/* Creator, files closed: rename every partial file into place, in order,
 * or (when one rename fails) none: the renamed ones are rolled back to the
 * previous versions, and the partial files removed. */
lbk_status lbk_outfile_commit(lbk_outfile *const *files, int count);
/* Close, and (creator) remove the partial file. */
void lbk_outfile_discard(lbk_outfile *f, bool remove);

/* Once, before any file is created: the signals above remove the partial
 * files (a signal the process ignores stays ignored), and SIGXFSZ is
 * ignored, so that a file-size limit (ulimit -f) fails a write like a full
 * disk instead of killing the process. */
void lbk_cleanup_handle_signals(void);
/* One more signal that ends the run the same way (SIGUSR1 without
 * run.checkpoint). */
void lbk_cleanup_handle_signal(int sig);

#endif
