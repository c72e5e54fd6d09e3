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

/* fdopen(fd, mode), or NULL with fd closed, errno kept and the reason in why. */
static FILE *fdopen_or_close(int fd, const char *mode, char *why, size_t whylen) {
  FILE *f = fdopen(fd, mode);
  if (!f) {
    int e = errno;
    close(fd);
    say(why, whylen, strerror(e));
    errno = e;
  }
  return f;
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
  return fdopen_or_close(fd, how == HOT_FILE_READ ? "rb" : "wb", why, whylen);
}

FILE *fileio_fopen_stream(const char *path, char *why, size_t whylen) {
  if (!path || !*path) {
    say(why, whylen, "no file given");
    errno = ENOENT;
    return NULL;
  }
  int fd;
  if (strcmp(path, "-") == 0) {
    fd = fcntl(0, F_DUPFD_CLOEXEC, 3); /* stdin, read through a copy the caller closes */
  } else {
    struct stat sb;
    /* a directory or a block device is not a stream (and opening a device may act) */
    if (stat(path, &sb) == 0 && (S_ISDIR(sb.st_mode) || S_ISBLK(sb.st_mode))) {
      if (why && whylen) snprintf(why, whylen, "not a stream (%s)", fileio_kind(sb.st_mode));
      errno = EINVAL;
      return NULL;
    }
    /* blocking: a FIFO's open waits for its writer, as cat's does */
    fd = open(path, O_RDONLY | O_CLOEXEC);
  }
  if (fd < 0) {
    int e = errno;
    say(why, whylen, strerror(e));
    errno = e;
    return NULL;
  }
  struct stat sb;
  if (fstat(fd, &sb) != 0 || S_ISDIR(sb.st_mode) || S_ISBLK(sb.st_mode)) {
    int e = errno;
    if (fstat(fd, &sb) == 0) {
      if (why && whylen) snprintf(why, whylen, "not a stream (%s)", fileio_kind(sb.st_mode));
      e = EINVAL;
    } else {
      say(why, whylen, strerror(e));
    }
    close(fd);
    errno = e;
    return NULL;
  }
  return fdopen_or_close(fd, "rb", why, whylen);
}

/* The folder that holds path (its text up to the last '/', trailing slashes ignored; "." when
 * none) into buf. 0, or -1 when it does not fit. */
static int parent_of(const char *path, char *buf, size_t n) {
  size_t len = strlen(path);
  while (len > 1 && path[len - 1] == '/') --len;
  size_t cut = len;
  while (cut > 0 && path[cut - 1] != '/') --cut;
  if (cut == 0) return snprintf(buf, n, ".") < (int)n ? 0 : -1;
  while (cut > 1 && path[cut - 1] == '/') --cut; /* "a//b" -> "a"; "/b" -> "/" */
  if (cut >= n) return -1;
  memcpy(buf, path, cut);
  buf[cut] = '\0';
  return 0;
}

/* 0 when dir is an existing folder this process may create files in; else -1 with why. */
static int writable_dir(const char *dir, const char *what, char *why, size_t whylen) {
  struct stat sb;
  if (stat(dir, &sb) != 0) {
    int e = errno;
    if (why && whylen) snprintf(why, whylen, "%s %s: %s", what, dir, strerror(e));
    errno = e;
    return -1;
  }
  if (!S_ISDIR(sb.st_mode)) {
    if (why && whylen) snprintf(why, whylen, "%s %s is not a directory (%s)", what, dir, fileio_kind(sb.st_mode));
    errno = ENOTDIR;
    return -1;
  }
  if (access(dir, W_OK | X_OK) != 0) {
    int e = errno;
    if (why && whylen) snprintf(why, whylen, "%s %s: not writable (%s)", what, dir, strerror(e));
    errno = e;
    return -1;
  }
  return 0;
}

int fileio_check_output(const char *path, int is_dir, char *why, size_t whylen) {
  if (!path || !*path) {
    say(why, whylen, "no file given");
    errno = ENOENT;
    return -1;
  }
  char parent[4096];
  if (parent_of(path, parent, sizeof parent) != 0) {
    say(why, whylen, strerror(ENAMETOOLONG));
    errno = ENAMETOOLONG;
    return -1;
  }
  struct stat sb;
  if (stat(path, &sb) == 0) {
    if (is_dir) return writable_dir(path, "directory", why, whylen);
    if (!S_ISREG(sb.st_mode)) return not_regular(sb.st_mode, why, whylen);
    if (access(path, W_OK) != 0) {
      int e = errno;
      if (why && whylen) snprintf(why, whylen, "not writable (%s)", strerror(e));
      errno = e;
      return -1;
    }
    return 0;
  }
  if (errno != ENOENT) {
    int e = errno;
    say(why, whylen, strerror(e));
    errno = e;
    return -1;
  }
  /* absent: created in its folder, which must exist (hot never creates more than the last part) */
  return writable_dir(parent, "folder", why, whylen);
}

int fileio_mkdir_last(const char *dir, char *why, size_t whylen) {
  if (fileio_check_output(dir, 1, why, whylen) != 0) return -1;
  if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
    int e = errno;
    say(why, whylen, strerror(e));
    errno = e;
    return -1;
  }
  return writable_dir(dir, "directory", why, whylen);
}

int fileio_mkdir_default(const char *dir, char *created, size_t n, char *why, size_t whylen) {
  char buf[4096];
  size_t len = dir ? strlen(dir) : 0;
  if (created && n) created[0] = '\0';
  if (len == 0 || len >= sizeof buf) {
    say(why, whylen, strerror(ENAMETOOLONG));
    errno = ENAMETOOLONG;
    return -1;
  }
  memcpy(buf, dir, len + 1);
  for (size_t i = 1; i <= len; i++) {
    if (buf[i] != '/' && buf[i] != '\0') continue;
    char c = buf[i];
    buf[i] = '\0';
    if (mkdir(buf, 0700) == 0) {
      if (created && n && !created[0]) snprintf(created, n, "%s", buf);
    } else if (errno != EEXIST) {
      int e = errno;
      if (why && whylen) snprintf(why, whylen, "cannot create %s: %s", buf, strerror(e));
      errno = e;
      return -1;
    }
    buf[i] = c;
  }
  return writable_dir(dir, "folder", why, whylen);
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
