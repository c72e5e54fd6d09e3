/* fileio.c — regular files opened without blocking, and messages cut at a word (fileio.h). */
#define _GNU_SOURCE
#include "fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *fileio_kind(mode_t m) {
  if (S_ISREG(m)) return "a regular file";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISDIR(m)) return "a directory";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  if (S_ISLNK(m)) return "a symbolic link";
  return "an unknown kind of file";
}

static void say(char *why, size_t whylen, const char *s) {
  if (why && whylen) snprintf(why, whylen, "%s", s);
}

/* "not a regular file (a FIFO)" into why; errno EINVAL; -1. */
static int not_regular(mode_t m, char *why, size_t whylen) {
  if (why && whylen) snprintf(why, whylen, "not a regular file (%s)", fileio_kind(m));
  errno = EINVAL;
  return -1;
}

int fileio_check_regular(const char *path, int must_exist, char *why, size_t whylen) {
  struct stat sb;
  if (!path || !*path) {
    say(why, whylen, "no file given");
    errno = ENOENT;
    return -1;
  }
  if (stat(path, &sb) != 0) {
    int e = errno;
    if (e == ENOENT && !must_exist) return 0;
    say(why, whylen, strerror(e));
    errno = e;
    return -1;
  }
  return S_ISREG(sb.st_mode) ? 0 : not_regular(sb.st_mode, why, whylen);
}

int fileio_open(const char *path, int how, mode_t mode, char *why, size_t whylen) {
  const int nofollow = (how & HOT_FILE_NOFOLLOW) != 0;
  how &= ~HOT_FILE_NOFOLLOW;
  if (!path || !*path) {
    say(why, whylen, "no file given");
    errno = ENOENT;
    return -1;
  }
  /* an existing file that is not regular is not even opened (opening a device may act) */
  struct stat sb;
  if ((nofollow ? lstat(path, &sb) : stat(path, &sb)) == 0 && !S_ISREG(sb.st_mode))
    return not_regular(sb.st_mode, why, whylen);
  int flags = O_CLOEXEC | O_NONBLOCK | (nofollow ? O_NOFOLLOW : 0);
  if (how == HOT_FILE_READ) flags |= O_RDONLY;
  else if (how == HOT_FILE_WRITE) flags |= O_WRONLY | O_CREAT;
  else if (how == HOT_FILE_WRITE_NEW) flags |= O_WRONLY | O_CREAT | O_EXCL;
  else {
    say(why, whylen, "internal error: unknown open mode");
    errno = EINVAL;
    return -1;
  }
  int fd = open(path, flags, mode);
  if (fd < 0) {
    int e = errno;
    /* a FIFO put there since the check (ENXIO: no reader), or a link under O_NOFOLLOW */
    if ((e == ENXIO || e == ELOOP) && lstat(path, &sb) == 0 && !S_ISREG(sb.st_mode))
      return not_regular(sb.st_mode, why, whylen);
    say(why, whylen, strerror(e));
    errno = e;
    return -1;
  }
  if (fstat(fd, &sb) != 0) {
    int e = errno;
    close(fd);
    say(why, whylen, strerror(e));
    errno = e;
    return -1;
  }
  if (!S_ISREG(sb.st_mode)) {
    close(fd);
    return not_regular(sb.st_mode, why, whylen);
  }
  int fl = fcntl(fd, F_GETFL);
  if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0 ||
      (how == HOT_FILE_WRITE && ftruncate(fd, 0) != 0)) {
    int e = errno;
    close(fd);
    say(why, whylen, strerror(e));
    errno = e;
    return -1;
  }
  return fd;
}

FILE *fileio_fopen(const char *path, const char *mode, char *why, size_t whylen) {
  int how;
  if (mode && (!strcmp(mode, "rb") || !strcmp(mode, "r"))) how = HOT_FILE_READ;
  else if (mode && (!strcmp(mode, "wb") || !strcmp(mode, "w"))) how = HOT_FILE_WRITE;
  else {
    say(why, whylen, "internal error: unknown stream mode");
    errno = EINVAL;
    return NULL;
  }
  int fd = fileio_open(path, how, 0644, why, whylen);
  if (fd < 0) return NULL;
  FILE *f = fdopen(fd, how == HOT_FILE_READ ? "rb" : "wb");
  if (!f) {
    int e = errno;
    close(fd);
    say(why, whylen, strerror(e));
    errno = e;
  }
  return f;
}

/* ---- messages ------------------------------------------------------------------------------ */

static int is_cont(unsigned char c) { return (c & 0xC0) == 0x80; }

void fileio_msg_cut(char *dst, size_t n, size_t full) {
  if (!dst || n == 0 || full < n) return;
  static const char dots[] = "...";
  if (n < sizeof dots + 1) { /* no room for a word and the dots: whole characters only */
    size_t i = n - 1;
    while (i > 0 && is_cont((unsigned char)dst[i])) --i;
    dst[i] = '\0';
    return;
  }
  const size_t keep = n - sizeof dots; /* text bytes that leave room for "..." and the NUL */
  size_t cut = 0;
  /* the last word boundary in the second half of what fits: before a space, or after a path or
   * list separator */
  for (size_t i = keep; i > keep / 2; --i) {
    const char c = dst[i], p = dst[i - 1];
    if (c == ' ' || p == '/' || p == ',' || p == ';' || p == ':' || p == '=' || p == ' ') {
      cut = i;
      break;
    }
  }
  if (!cut) { /* one long word: at the last whole UTF-8 character */
    cut = keep;
    while (cut > 0 && is_cont((unsigned char)dst[cut])) --cut;
  }
  while (cut > 0 && dst[cut - 1] == ' ') --cut;
  memcpy(dst + cut, dots, sizeof dots);
}

int fileio_msgf(char *dst, size_t n, const char *fmt, ...) {
  if (!dst || !n) return -1;
  va_list ap;
  va_start(ap, fmt);
  int w = vsnprintf(dst, n, fmt, ap);
  va_end(ap);
  if (w < 0) {
    dst[0] = '\0';
    return -1;
  }
  fileio_msg_cut(dst, n, (size_t)w);
  return -1;
}

const char *fileio_path_short(const char *path, char *buf, size_t max) {
  if (!path) return "(null)";
  const size_t len = strlen(path);
  if (len <= max || max < 16) return path;
  size_t head = (max - 3) / 2, tail = max - 3 - head;
  while (head > 0 && is_cont((unsigned char)path[head])) --head;
  size_t from = len - tail;
  while (from < len && is_cont((unsigned char)path[from])) ++from;
  memcpy(buf, path, head);
  memcpy(buf + head, "...", 3);
  memcpy(buf + head + 3, path + from, len - from + 1);
  return buf;
}
