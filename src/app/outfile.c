/* O_TMPFILE and linkat's AT_SYMLINK_FOLLOW. */
#define _GNU_SOURCE
#include "outfile.h"

#include "cleanup.h"
#include "log.h"
#include "try.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char partial_suffix[] = ".lbknn-partial";
static const char backup_suffix[] = ".lbknn-backup";

/* An fd of this process (stdout, stderr) that already writes to the file
 * at sb, or -1: writing there means writing through it, not reopening (and
 * truncating) the file behind the shell's back. */
static int own_stream_for(const struct stat *sb)
{
    for (int fd = STDOUT_FILENO; fd <= STDERR_FILENO; fd++) {
        struct stat own;
        if (fstat(fd, &own) == 0 && own.st_dev == sb->st_dev && own.st_ino == sb->st_ino)
            return fd;
    }
    return -1;
}

bool lbk_outfile_is_own_stream(const struct stat *sb) { return own_stream_for(sb) >= 0; }

/* Six characters that differ between runs and between calls: the name is
 * then created exclusively, so a clash is retried, never shared. */
static void random_tag(char tag[7])
{
    static const char digits[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    static unsigned counter;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t x = (uint64_t)ts.tv_nsec ^ (uint64_t)ts.tv_sec << 30 ^ (uint64_t)getpid() << 40 ^
                 (uint64_t)++counter * 0x9e3779b97f4a7c15u;
    for (int i = 0; i < 6; i++) {
        x ^= x >> 29;
        x *= 0xbf58476d1ce4e5b9u;
        x ^= x >> 32;
        tag[i] = digits[x % (sizeof digits - 1)];
    }
    tag[6] = '\0';
}

/* A new file "<path>.XXXXXX.lbknn-partial", remembered for the signal
 * handler. Mode 0644 less the umask, as a file created in place would be. */
static lbk_status create_partial(lbk_outfile *f, const char *what)
{
    for (int attempt = 0; attempt < 100; attempt++) {
        char tag[7];
        random_tag(tag);
        snprintf(f->temp, sizeof f->temp, "%s.%s%s", f->path, tag, partial_suffix);
        lbk_cleanup_hold();
        f->fd = open(f->temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (f->fd >= 0)
            lbk_cleanup_remember(f->temp);
        const int saved = errno;
        lbk_cleanup_release();
        if (f->fd >= 0)
            return LBK_OK;
        if (saved != EEXIST) {
            lbk_error("%s: cannot create %s's partial file %s: %s", f->path, what, f->temp,
                      strerror(saved));
            f->temp[0] = '\0';
            return LBK_ERR_IO;
        }
    }
    lbk_error("%s: cannot find a free name for %s's partial file", f->path, what);
    f->temp[0] = '\0';
    return LBK_ERR_IO;
}

/* An unnamed file in path's directory (mode 0644 less the umask), or false
 * where the file system has none (then a named partial file will do). */
static bool create_unnamed(lbk_outfile *f)
{
    char dir[sizeof f->path];
    const char *slash = strrchr(f->path, '/');
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - f->path) : 1,
             slash ? (slash == f->path ? "/" : f->path) : ".");
    f->fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
    if (f->fd < 0)
        return false;
    /* Its only name, for writers that open by name and for the commit's
     * linkat: without /proc, a named partial file instead. */
    snprintf(f->fd_path, sizeof f->fd_path, "/proc/self/fd/%d", f->fd);
    if (access(f->fd_path, W_OK) != 0) {
        close(f->fd);
        f->fd = -1;
        return false;
    }
    f->unnamed = true;
    return true;
}

/* Something that is not a regular file: opened as it is, written in place. */
static lbk_status open_direct(lbk_outfile *f, const struct stat *sb, const char *what,
                              bool shared)
{
    LBK_FAIL_IF(S_ISDIR(sb->st_mode), LBK_ERR_CONFIG, "%s: %s is a directory", f->path, what);
    LBK_FAIL_IF(shared, LBK_ERR_CONFIG,
                "%s: %s is not a regular file, but several ranks write slices of it "
                "(mpi.merge: reduce_scatter or mpi.partition: replicate); write it to a file",
                f->path, what);
    const int own = S_ISREG(sb->st_mode) ? own_stream_for(sb) : -1;
    f->direct = true;
    f->fd = own >= 0 ? fcntl(own, F_DUPFD_CLOEXEC, 0)
                     : open(f->path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
    LBK_FAIL_IF(f->fd < 0, LBK_ERR_IO, "%s: cannot open %s: %s", f->path, what, strerror(errno));
    return LBK_OK;
}

lbk_status lbk_outfile_create(lbk_outfile *f, const char *path, const char *what, bool shared)
{
    struct stat sb;
    char name[sizeof f->path];
    LBK_FAIL_IF(strlen(path) >= sizeof name, LBK_ERR_CONFIG, "%s: %s's path is too long", path,
                what);
    snprintf(name, sizeof name, "%s", path); /* path may be f->path itself */
    memset(f, 0, sizeof *f);
    f->fd = -1;
    snprintf(f->path, sizeof f->path, "%s", name);
    if (stat(name, &sb) == 0 && (!S_ISREG(sb.st_mode) || own_stream_for(&sb) >= 0))
        return open_direct(f, &sb, what, shared);
    if (!shared && create_unnamed(f))
        return LBK_OK;
    return create_partial(f, what);
}

void lbk_outfile_kept_name(const char *path, char *buf, size_t size)
{
    snprintf(buf, size, "%s%s", path, partial_suffix);
}

lbk_status lbk_outfile_create_kept(lbk_outfile *f, const char *path, const char *what,
                                   uint64_t keep)
{
    struct stat sb;
    memset(f, 0, sizeof *f);
    f->fd = -1;
    LBK_FAIL_IF(strlen(path) >= sizeof f->path, LBK_ERR_CONFIG, "%s: %s's path is too long", path,
                what);
    LBK_FAIL_IF(stat(path, &sb) == 0 && !S_ISREG(sb.st_mode), LBK_ERR_CONFIG,
                "%s: %s is not a regular file, and run.checkpoint keeps a partial file next to "
                "it; write it to a file",
                path, what);
    snprintf(f->path, sizeof f->path, "%s", path);
    lbk_outfile_kept_name(path, f->temp, sizeof f->temp);
    /* Not remembered by the signal handlers: the checkpoint refers to it.
     * Read back too, for its CRC (checkpoint.c). */
    f->fd = open(f->temp, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    LBK_FAIL_IF(f->fd < 0, LBK_ERR_IO, "%s: cannot create %s's partial file %s: %s", path, what,
                f->temp, strerror(errno));
    f->kept = true;
    LBK_FAIL_IF(keep != LBK_OUTFILE_KEEP_LENGTH && ftruncate(f->fd, (off_t)keep) != 0, LBK_ERR_IO,
                "%s: cannot cut %s's partial file %s to %llu bytes: %s", path, what, f->temp,
                (unsigned long long)keep, strerror(errno));
    return LBK_OK;
}

lbk_status lbk_outfile_create_named(lbk_outfile *f, const char *path, const char *what)
{
    struct stat sb;
    LBK_FAIL_IF(stat(path, &sb) == 0 && !S_ISREG(sb.st_mode), LBK_ERR_CONFIG,
                "%s: %s is not a regular file, and its format is laid out by a library that "
                "writes a file by name; write it to a file",
                path, what);
    return lbk_outfile_create(f, path, what, true);
}

lbk_status lbk_outfile_join(lbk_outfile *f)
{
    f->fd = -1;
    if (f->temp[0] == '\0')
        return LBK_OK;
    f->fd = open(f->temp, (f->kept ? O_RDWR : O_WRONLY) | O_CLOEXEC);
    LBK_FAIL_IF(f->fd < 0, LBK_ERR_IO, "%s: cannot open the partial file %s: %s", f->path,
                f->temp, strerror(errno));
    return LBK_OK;
}

lbk_status lbk_outfile_write_at(lbk_outfile *f, uint64_t offset, const void *data, size_t len)
{
    const char *p = data;
    LBK_FAIL_IF(f->direct && offset != f->written, LBK_ERR_INTERNAL,
                "%s: internal: out-of-order write at byte %llu of a file written in place",
                f->path, (unsigned long long)offset);
    while (len > 0) {
        const ssize_t n = f->direct ? write(f->fd, p, len) : pwrite(f->fd, p, len, (off_t)offset);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            lbk_error("%s: write failed: %s", f->path, strerror(errno));
            return LBK_ERR_IO;
        }
        p += n;
        len -= (size_t)n;
        offset += (uint64_t)n;
    }
    if (f->direct)
        f->written = offset;
    return LBK_OK;
}

const char *lbk_outfile_write_path(const lbk_outfile *f)
{
    return f->unnamed ? f->fd_path : f->temp[0] ? f->temp : f->path;
}

lbk_status lbk_outfile_close(lbk_outfile *f)
{
    if (f->fd < 0 || f->unnamed)
        return LBK_OK;
    const int rc = close(f->fd);
    f->fd = -1;
    LBK_FAIL_IF(rc != 0, LBK_ERR_IO, "%s: closing failed: %s", lbk_outfile_write_path(f),
                strerror(errno));
    return LBK_OK;
}

void lbk_outfile_discard(lbk_outfile *f, bool remove)
{
    if (f->fd >= 0)
        close(f->fd);
    f->fd = -1;
    f->unnamed = false; /* closed, it is gone */
    if (remove && f->temp[0]) {
        unlink(f->temp);
        lbk_cleanup_forget(f->temp);
        f->temp[0] = '\0';
    }
}

/* ---- commit --------------------------------------------------------------- */

typedef struct {
    char backup[sizeof((lbk_outfile *)0)->temp + sizeof backup_suffix];
    bool existed, saved, renamed;
} commit_slot;

/* An unnamed file gets its partial name (and loses its descriptor). */
static lbk_status name_unnamed(lbk_outfile *f)
{
    for (int attempt = 0; attempt < 100; attempt++) {
        char tag[7];
        random_tag(tag);
        snprintf(f->temp, sizeof f->temp, "%s.%s%s", f->path, tag, partial_suffix);
        if (linkat(AT_FDCWD, f->fd_path, AT_FDCWD, f->temp, AT_SYMLINK_FOLLOW) == 0) {
            lbk_cleanup_remember(f->temp);
            f->unnamed = false;
            return lbk_outfile_close(f);
        }
        if (errno != EEXIST)
            break;
    }
    lbk_error("%s: cannot give the finished file a name (%s): %s", f->path, f->temp,
              strerror(errno));
    f->temp[0] = '\0';
    return LBK_ERR_IO;
}

/* A second name (hard link) for the version the rename will replace, so a
 * failed commit can put it back. Where links are impossible, the version
 * simply cannot be put back. */
static void save_previous(const lbk_outfile *f, commit_slot *slot)
{
    struct stat sb;
    slot->existed = lstat(f->path, &sb) == 0;
    const size_t stem = strlen(f->temp) - (sizeof partial_suffix - 1);
    snprintf(slot->backup, sizeof slot->backup, "%.*s%s", (int)stem, f->temp, backup_suffix);
    slot->saved = slot->existed && !S_ISDIR(sb.st_mode) && link(f->path, slot->backup) == 0;
}

/* After a failed rename: every file renamed so far goes back to what it
 * was (or, where nothing was there, is removed again: it is this run's). */
static void roll_back(lbk_outfile *const *files, commit_slot *slots, int count)
{
    for (int i = 0; i < count; i++) {
        if (!slots[i].renamed)
            continue;
        if (slots[i].saved)
            rename(slots[i].backup, files[i]->path);
        else if (!slots[i].existed)
            unlink(files[i]->path);
        else
            lbk_error("%s: now holds this run's result; its previous version could not be "
                      "kept (no hard links here)",
                      files[i]->path);
        slots[i].saved = false;
    }
}

static lbk_status rename_all(lbk_outfile *const *files, commit_slot *slots, int count)
{
    for (int i = 0; i < count; i++) {
        lbk_outfile *f = files[i];
        if (!f->temp[0])
            continue;
        if (rename(f->temp, f->path) != 0) {
            lbk_error("%s: cannot rename %s into place: %s; no output file was changed", f->path,
                      f->temp, strerror(errno));
            return LBK_ERR_IO;
        }
        slots[i].renamed = true;
        lbk_cleanup_forget(f->temp);
        f->temp[0] = '\0';
    }
    return LBK_OK;
}

lbk_status lbk_outfile_commit(lbk_outfile *const *files, int count)
{
    commit_slot slots[LBK_OUTFILE_MAX];
    LBK_FAIL_IF(count > LBK_OUTFILE_MAX, LBK_ERR_INTERNAL, "internal: %d files in one commit",
                count);
    memset(slots, 0, sizeof slots);
    lbk_cleanup_hold();
    lbk_status st = LBK_OK;
    for (int i = 0; i < count && st == LBK_OK; i++)
        if (files[i]->unnamed)
            st = name_unnamed(files[i]);
    for (int i = 0; i < count && st == LBK_OK; i++)
        if (files[i]->temp[0])
            save_previous(files[i], &slots[i]);
    if (st == LBK_OK)
        st = rename_all(files, slots, count);
    if (st != LBK_OK) {
        roll_back(files, slots, count);
        for (int i = 0; i < count; i++)
            lbk_outfile_discard(files[i], true);
    }
    for (int i = 0; i < count; i++)
        if (slots[i].saved)
            unlink(slots[i].backup);
    lbk_cleanup_release();
    return st;
}
