/* fileio.h — the one place where hot opens a file a user named, and the one place where a
 * message is cut to fit its buffer (docs/reliability.md).
 *
 * Files, two kinds (the table of docs/reliability.md).
 *   Streams, read once from start to end: a spec. fileio_fopen_stream opens a regular file, a
 *   FIFO or pipe (`<(cmd)`, /dev/stdin), a socket or a character device, and "-" as stdin; the
 *   open and the reads block only until the writer writes, as cat's do. Its reader bounds the size.
 *   Random-access or written files, regular only: a kernel-cache entry, a kernel pack, a capture,
 *   a tuning database (and its -wal, -journal, -shm companions), hot-tune's merge inputs and plot
 *   output, hot-gen's --emit and --dump-cubin files, hot-bench's --out. Anything else (a FIFO, a
 *   device, a socket, a directory) is refused with one line naming the path, and never blocks the
 *   process: fileio_open opens with O_NONBLOCK, checks the descriptor with fstat, and only then
 *   clears O_NONBLOCK. A file another library opens by name (SQLite) is checked with
 *   fileio_check_regular before that library sees the path.
 *
 * Lives in gen/ (library hot_gen) because the generator (spec loading, hot-gen) needs it as much
 * as the runtime does, and every program and libhot link hot_gen.
 *
 * Messages. fileio_msgf formats like snprintf into a fixed buffer; a message that does not fit is
 * cut at a word boundary and ends with "..." (never in the middle of a word or of a UTF-8
 * character). fileio_path_short shows a long path as its head and tail.
 */
#ifndef HOT_FILEIO_H
#define HOT_FILEIO_H

#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

/* How fileio_open opens. */
typedef enum {
  HOT_FILE_READ = 0,        /* an existing file, read-only */
  HOT_FILE_WRITE = 1,       /* write-only; created (mode) when missing, emptied when regular */
  HOT_FILE_WRITE_NEW = 2    /* write-only; created, must not exist (O_EXCL) */
} hot_file_how;

/* Opens `path` as `how` (HOT_FILE_NOFOLLOW or'ed in: a symbolic link is refused, O_NOFOLLOW)
 * without ever blocking, and checks that it is a regular file. Returns a descriptor (close-on-
 * exec, blocking I/O) the caller owns (close), or -1 with errno set and a short reason in why
 * ("not a regular file (a FIFO)", or strerror's text; why may be NULL). A non-regular file gives
 * errno EINVAL, a missing one ENOENT (what open says). */
#define HOT_FILE_NOFOLLOW 8
int fileio_open(const char *path, int how, mode_t mode, char *why, size_t whylen);

/* fileio_open wrapped in a stdio stream: mode "rb" (HOT_FILE_READ) or "wb" (HOT_FILE_WRITE).
 * NULL with errno and why as fileio_open's (EINVAL also for another mode). */
FILE *fileio_fopen(const char *path, const char *mode, char *why, size_t whylen);

/* A stream read once from start to end (a spec): `path` opened read-only and blocking, or "-"
 * for standard input (a duplicate of descriptor 0, so fclose leaves stdin open). A regular file,
 * a FIFO/pipe, a socket or a character device; a directory or a block device is refused ("not a
 * stream (a directory)", errno EINVAL). Returns a stream the caller owns (fclose), or NULL with
 * errno set and a short reason in why (may be NULL). The caller bounds what it reads. */
FILE *fileio_fopen_stream(const char *path, char *why, size_t whylen);

/* An output a program will write, checked before it does any work (docs/reliability.md): a file
 * (is_dir 0) that is a writable regular file, or absent in an existing folder it may write; a
 * folder (is_dir 1) that exists and is writable, or is absent with its parent existing and
 * writable (hot creates the last component only, never a chain of folders). 0, or -1 with errno
 * set and a short reason in why ("folder /nonexistent: No such file or directory", "not a regular
 * file (a FIFO)"). Never opens or creates anything. */
int fileio_check_output(const char *path, int is_dir, char *why, size_t whylen);

/* mkdir of `dir`'s last component when it is absent (mode 0755), after fileio_check_output(dir,
 * 1): the folder above must exist. 0 when dir then is a writable folder; -1 with errno and why. */
int fileio_mkdir_last(const char *dir, char *why, size_t whylen);

/* A default location of hot's own (the user tuning DB's folder under the cache folder), created
 * with its missing parents (mode 0700), as a cache folder is; never for a path the user named.
 * The first folder it created (the top of what is new) goes into created ("" when none), so the
 * caller says what it made. 0, or -1 with errno and why. */
int fileio_mkdir_default(const char *dir, char *created, size_t n, char *why, size_t whylen);

/* Without opening it: 0 when `path` is a regular file (after symbolic links), or absent and
 * !must_exist; else -1 with errno and why as fileio_open's. For files another library opens
 * by name, and for the target of a write through a temporary file and rename (an existing FIFO
 * or directory there is refused, not replaced). */
int fileio_check_regular(const char *path, int must_exist, char *why, size_t whylen);

/* "a FIFO", "a directory", "a character device", "a block device", "a socket", "a symbolic
 * link", "a regular file" or "an unknown kind of file", for st_mode m. Static storage. */
const char *fileio_kind(mode_t m);

/* vsnprintf of fmt into dst (n bytes, always NUL-terminated when n > 0; nothing when dst is NULL
 * or n is 0). When the text does not fit it is cut after the last whole word that leaves room for
 * "..." (or, with no space in reach, at the last whole UTF-8 character) and "..." is appended.
 * Returns -1, like diag_errf, so `return fileio_msgf(err, n, ...)` reports a failure. */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
int fileio_msgf(char *dst, size_t n, const char *fmt, ...);

/* Cuts the message in dst (its buffer holds n bytes and was filled by a cut format; `full` is the
 * length the whole text would have had) the way fileio_msgf does: nothing when full < n. */
void fileio_msg_cut(char *dst, size_t n, size_t full);

/* `path` when it is at most `max` bytes, else its first and last bytes around "..." (max bytes
 * in all, at UTF-8 character boundaries), written into buf (max + 1 bytes). Returns buf or path. */
const char *fileio_path_short(const char *path, char *buf, size_t max);

#endif
