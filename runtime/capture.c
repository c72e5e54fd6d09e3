/* capture.c — layer capture files: hot_capture_write (hot.h) and the validating reader
 * capture_read (capture.h). Format: capture.h and docs/capture.md.
 *
 * Both sides stream: the writer encodes and hashes through one bounded buffer (no copy of the
 * tensors), the reader checks the whole header against the file's size before it allocates the
 * fp32 copies, then decodes and hashes through the same kind of buffer. */
#define _GNU_SOURCE
#include "capture.h"
#include "le.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "diag.h"
#include "fileio.h"
#include "hash.h"
#include "hot_math.cuh"

static const unsigned char MAGIC[8] = {'H', 'O', 'T', 'C', 'A', 'P', 0, 0};

#define CAP_NAME_OFF 68
#define CAP_NAME_BYTES 64
#define CAP_RESERVED_OFF 132
#define CAP_CHUNK ((size_t)1 << 20) /* bytes encoded / decoded per write / read */

/* ---- little-endian helpers and messages ----------------------------------------------------- */

/* The path as shown in messages: control bytes as \ddd, so a message stays one line; long paths
 * are cut (the message buffer is bounded anyway). */
static const char *shown(const char *path, char out[512]) {
  size_t o = 0;
  for (const unsigned char *s = (const unsigned char *)path; *s && o + 5 < 512; ++s) {
    if (*s < 0x20 || *s == 0x7f) o += (size_t)snprintf(out + o, 512 - o, "\\%03o", *s);
    else out[o++] = (char)*s;
  }
  out[o] = '\0';
  return out;
}

static const char *const TENSOR[3] = {"x", "w", "g_y"};

static size_t elem_bytes(hot_dtype dt) { return dt == HOT_DT_F32 ? 4 : 2; }

/* 1 when name is 1 .. HOT_NAME_MAX-1 printable ASCII bytes; else 0 with *bad the first
 * offending byte index (or the length). */
static int name_ok(const char *name, size_t n, size_t *bad) {
  if (n == 0 || n >= HOT_NAME_MAX) {
    *bad = n;
    return 0;
  }
  for (size_t i = 0; i < n; ++i)
    if ((unsigned char)name[i] < 0x20 || (unsigned char)name[i] > 0x7e) {
      *bad = i;
      return 0;
    }
  return 1;
}

/* Index of the first non-finite of the n elements at p (dtype dt), or -1. */
static int64_t first_nonfinite(const void *p, hot_dtype dt, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    if (!isfinite(hot_load_f32(p, (long long)i, (int)dt))) return i;
  return -1;
}

/* ---- writer -------------------------------------------------------------------------------- */

static unsigned long tmp_counter;

/* Writes n bytes, retrying short writes. 0 or -1 (errno set). */
static int write_all(int fd, const unsigned char *p, size_t n) {
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      if (w == 0) errno = EIO;
      return -1;
    }
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

/* Encodes n elements of dtype dt from src little-endian through buf (CAP_CHUNK bytes), hashing
 * and writing each chunk. 0 or -1 (errno set). */
static int write_tensor(int fd, hash_sha256 *h, unsigned char *buf, const void *src, hot_dtype dt,
                        uint64_t n) {
  const size_t esz = elem_bytes(dt), per = CAP_CHUNK / esz;
  const unsigned char *s = src;
  while (n) {
    size_t k = n < per ? (size_t)n : per;
    if (esz == 4) {
      for (size_t i = 0; i < k; ++i) {
        uint32_t v;
        memcpy(&v, s + 4 * i, 4);
        hot_le_put(buf + 4 * i, v, 4);
      }
    } else {
      for (size_t i = 0; i < k; ++i) {
        uint16_t v;
        memcpy(&v, s + 2 * i, 2);
        hot_le_put(buf + 2 * i, v, 2);
      }
    }
    hash_sha256_update(h, buf, k * esz);
    if (write_all(fd, buf, k * esz)) return -1;
    s += k * esz;
    n -= k;
  }
  return 0;
}

/* Checks layer_name (its length into *nlen), the dtype and the four sizes of a capture. */
static hot_status capture_check_args(const char *ps, const char *layer_name, size_t *nlen,
                                     hot_dtype dtype, const int64_t dim[4], char *err,
                                     size_t errlen) {
  if (!layer_name) {
    fileio_msgf(err, errlen, "capture %s: layer_name is NULL", ps);
    return HOT_ERR_INVALID;
  }
  size_t bad = 0;
  *nlen = strnlen(layer_name, HOT_NAME_MAX);
  if (!name_ok(layer_name, *nlen, &bad)) {
    if (*nlen == 0 || *nlen >= HOT_NAME_MAX)
      fileio_msgf(err, errlen, "capture %s: layer_name must be 1 .. %d bytes (got %s)", ps,
               HOT_NAME_MAX - 1, *nlen ? "a longer one" : "an empty one");
    else
      fileio_msgf(err, errlen, "capture %s: layer_name byte %zu is 0x%02x (printable ASCII only)",
               ps, bad, (unsigned char)layer_name[bad]);
    return HOT_ERR_INVALID;
  }
  if ((int)dtype < HOT_DT_F32 || (int)dtype > HOT_DT_F16) {
    fileio_msgf(err, errlen, "capture %s: dtype %d is not f32 (0), bf16 (1) or f16 (2)", ps,
             (int)dtype);
    return HOT_ERR_INVALID;
  }
  const char *dim_name[4] = {"batch", "tokens", "out_features", "in_features"};
  for (int i = 0; i < 4; ++i)
    if (dim[i] < 1 || dim[i] > HOT_CAPTURE_MAX_DIM) {
      fileio_msgf(err, errlen, "capture %s: %s = %lld must be in 1 .. %lld", ps, dim_name[i],
               (long long)dim[i], (long long)HOT_CAPTURE_MAX_DIM);
      return HOT_ERR_SHAPE;
    }
  if (dim[1] > HOT_CAPTURE_MAX_DIM / dim[0]) {
    fileio_msgf(err, errlen, "capture %s: T = batch * tokens = %lld * %lld exceeds %lld", ps,
             (long long)dim[0], (long long)dim[1], (long long)HOT_CAPTURE_MAX_DIM);
    return HOT_ERR_SHAPE;
  }
  return HOT_OK;
}

/* Refuses a non-finite element in any of the three tensors (rows[i] x cols[i] each). */
static hot_status capture_check_finite(const char *ps, const void *const tensor[3],
                                       hot_dtype dtype, const uint64_t rows[3],
                                       const uint64_t cols[3], char *err, size_t errlen) {
  for (int i = 0; i < 3; ++i) {
    int64_t at = first_nonfinite(tensor[i], dtype, (int64_t)(rows[i] * cols[i]));
    if (at >= 0) {
      float v = hot_load_f32(tensor[i], (long long)at, (int)dtype);
      fileio_msgf(err, errlen, "capture %s: %s[%lld][%lld] is %s (a capture holds finite values)",
               ps, TENSOR[i], (long long)((uint64_t)at / cols[i]),
               (long long)((uint64_t)at % cols[i]), isnan(v) ? "NaN" : "Inf");
      return HOT_ERR_NONFINITE;
    }
  }
  return HOT_OK;
}

/* Fills the header of a capture of `elems` elements of esz bytes (format: capture.h). */
static void capture_header(unsigned char hdr[HOT_CAPTURE_HEADER_BYTES], hot_dtype dtype,
                           uint64_t esz, const int64_t dim[4], uint64_t elems,
                           const char *layer_name, size_t nlen) {
  memset(hdr, 0, HOT_CAPTURE_HEADER_BYTES);
  memcpy(hdr, MAGIC, 8);
  hot_le_put(hdr + 8, HOT_CAPTURE_VERSION, 4);
  hot_le_put(hdr + 12, HOT_CAPTURE_HEADER_BYTES, 4);
  hot_le_put(hdr + 16, (uint64_t)dtype, 4);
  hot_le_put(hdr + 20, esz, 4);
  for (int i = 0; i < 4; ++i) hot_le_put(hdr + 24 + 8 * i, (uint64_t)dim[i], 8);
  hot_le_put(hdr + 56, elems * esz, 8);
  hot_le_put(hdr + 64, nlen, 4);
  memcpy(hdr + CAP_NAME_OFF, layer_name, nlen);
}

/* Creates a fresh temporary file next to path (its name into tmp[tlen]); the descriptor, or
 * -1 with errno set. */
static int open_tmp(const char *path, char *tmp, size_t tlen) {
  int fd = -1;
  for (int attempt = 0; fd < 0 && attempt < 16; ++attempt) { /* a stale name: take the next */
    unsigned long c = __atomic_fetch_add(&tmp_counter, 1, __ATOMIC_RELAXED);
    snprintf(tmp, tlen, "%s.tmp-%ld-%lu", path, (long)getpid(), c);
    fd = fileio_open(tmp, HOT_FILE_WRITE_NEW, 0644, NULL, 0);
    if (fd < 0 && errno != EEXIST) break;
  }
  return fd;
}

/* Writes header, tensors and checksum to fd, closes it and renames tmp to path; 1 on success,
 * else 0 with *what the failed step, *e its errno and tmp removed. */
static int capture_stream(int fd, const char *tmp, const char *path,
                          const unsigned char hdr[HOT_CAPTURE_HEADER_BYTES], unsigned char *buf,
                          const void *const tensor[3], hot_dtype dtype, const uint64_t rows[3],
                          const uint64_t cols[3], const char **what, int *e) {
  hash_sha256 h;
  hash_sha256_init(&h);
  hash_sha256_update(&h, hdr, HOT_CAPTURE_HEADER_BYTES);
  *what = "write";
  int ok = write_all(fd, hdr, HOT_CAPTURE_HEADER_BYTES) == 0;
  for (int i = 0; ok && i < 3; ++i)
    ok = write_tensor(fd, &h, buf, tensor[i], dtype, rows[i] * cols[i]) == 0;
  if (ok) {
    unsigned char sum[HASH_SHA256_BYTES];
    hash_sha256_final(&h, sum);
    ok = write_all(fd, sum, sizeof sum) == 0;
  }
  if (ok) {
    *what = "flush";
    ok = fsync(fd) == 0;
  }
  if (!ok) *e = errno;
  if (close(fd) != 0 && ok) ok = 0, *e = errno;
  if (ok) {
    *what = "rename into place";
    if (rename(tmp, path) != 0) ok = 0, *e = errno;
  }
  if (!ok) unlink(tmp);
  return ok;
}

hot_status hot_capture_write(const char *path, const char *layer_name, int64_t batch,
                             int64_t tokens, int64_t out_features, int64_t in_features,
                             hot_dtype dtype, const void *x, const void *w, const void *g_y,
                             char *err, size_t errlen) {
  char ps[512];
  if (err && errlen) err[0] = '\0';
  if (!path || !*path) {
    fileio_msgf(err, errlen, "capture: no file given (path is %s)", path ? "empty" : "NULL");
    return HOT_ERR_INVALID;
  }
  shown(path, ps);
  size_t nlen = 0;
  const int64_t dim[4] = {batch, tokens, out_features, in_features};
  hot_status st = capture_check_args(ps, layer_name, &nlen, dtype, dim, err, errlen);
  if (st != HOT_OK) return st;
  const void *const tensor[3] = {x, w, g_y};
  for (int i = 0; i < 3; ++i)
    if (!tensor[i]) {
      fileio_msgf(err, errlen, "capture %s: %s is NULL", ps, TENSOR[i]);
      return HOT_ERR_INVALID;
    }
  /* Each size <= 2^31-1, so each product <= 2^62 and their sum < 2^64: no overflow below. */
  const uint64_t T = (uint64_t)batch * (uint64_t)tokens, O = (uint64_t)out_features,
                 I = (uint64_t)in_features, esz = elem_bytes(dtype);
  const uint64_t rows[3] = {T, O, T}, cols[3] = {I, I, O};
  const uint64_t elems = T * I + O * I + T * O;
  const uint64_t limit = (uint64_t)INT64_MAX - HOT_CAPTURE_HEADER_BYTES - HOT_CAPTURE_SUM_BYTES;
  if (elems > limit / esz) {
    fileio_msgf(err, errlen, "capture %s: %llu elements of %llu bytes exceed the largest file", ps,
             (unsigned long long)elems, (unsigned long long)esz);
    return HOT_ERR_SHAPE;
  }
  st = capture_check_finite(ps, tensor, dtype, rows, cols, err, errlen);
  if (st != HOT_OK) return st;

  char twhy[128];
  if (fileio_check_regular(path, 0, twhy, sizeof twhy) != 0 && errno == EINVAL) {
    fileio_msgf(err, errlen, "capture %s: cannot write: %s", ps, twhy);
    return HOT_ERR_IO;
  }
  unsigned char *buf = malloc(CAP_CHUNK);
  size_t tlen = strlen(path) + 64;
  char *tmp = malloc(tlen);
  if (!buf || !tmp) {
    free(buf);
    free(tmp);
    fileio_msgf(err, errlen, "capture %s: out of memory", ps);
    return HOT_ERR_NOMEM;
  }
  unsigned char hdr[HOT_CAPTURE_HEADER_BYTES];
  capture_header(hdr, dtype, esz, dim, elems, layer_name, nlen);

  const char *what = "create";
  int fd = open_tmp(path, tmp, tlen);
  int ok = fd >= 0, e = ok ? 0 : errno;
  if (ok) ok = capture_stream(fd, tmp, path, hdr, buf, tensor, dtype, rows, cols, &what, &e);
  if (!ok) {
    char ts[512];
    if (!strcmp(what, "create"))
      fileio_msgf(err, errlen, "capture %s: cannot create %s: %s", ps, shown(tmp, ts), strerror(e));
    else
      fileio_msgf(err, errlen, "capture %s: cannot %s: %s", ps, what, strerror(e));
  }
  free(buf);
  free(tmp);
  return ok ? HOT_OK : HOT_ERR_IO;
}

/* ---- reader -------------------------------------------------------------------------------- */

void capture_free(hot_capture *c) {
  if (!c) return;
  free(c->x);
  free(c->w);
  free(c->g_y);
  memset(c, 0, sizeof *c);
}

/* Reads exactly n bytes. 0, or -1 with errno (0 when the file ended early). */
static int read_all(int fd, unsigned char *p, size_t n) {
  while (n) {
    ssize_t r = read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      if (r == 0) errno = 0;
      return -1;
    }
    p += r;
    n -= (size_t)r;
  }
  return 0;
}

/* What is wrong with header h of a file of `size` bytes (static text in why[256]), or NULL;
 * on NULL fills the sizes and dtype of c. */
static const char *check_header(const unsigned char *h, uint64_t size, hot_capture *c,
                                char why[256]) {
  if (memcmp(h, MAGIC, 8) != 0) return "not a capture file (wrong magic, bytes 0..7)";
  uint64_t ver = hot_le_get(h + 8, 4), hb = hot_le_get(h + 12, 4), dt = hot_le_get(h + 16, 4),
           esz = hot_le_get(h + 20, 4), payload = hot_le_get(h + 56, 8), nlen = hot_le_get(h + 64, 4);
  if (ver != HOT_CAPTURE_VERSION) {
    snprintf(why, 256, "format version %llu (byte 8), this build reads %d",
             (unsigned long long)ver, HOT_CAPTURE_VERSION);
    return why;
  }
  if (hb != HOT_CAPTURE_HEADER_BYTES) {
    snprintf(why, 256, "header size %llu (byte 12), version 1 has %d", (unsigned long long)hb,
             HOT_CAPTURE_HEADER_BYTES);
    return why;
  }
  if (dt > HOT_DT_F16) {
    snprintf(why, 256, "dtype %llu (byte 16) is not 0 (f32), 1 (bf16) or 2 (f16)",
             (unsigned long long)dt);
    return why;
  }
  if (esz != elem_bytes((hot_dtype)dt)) {
    snprintf(why, 256, "element size %llu (byte 20) does not match dtype %llu",
             (unsigned long long)esz, (unsigned long long)dt);
    return why;
  }
  const char *dim_name[4] = {"B", "L", "O", "I"};
  int64_t dim[4];
  for (int i = 0; i < 4; ++i) {
    dim[i] = (int64_t)hot_le_get(h + 24 + 8 * i, 8);
    if (dim[i] < 1 || dim[i] > HOT_CAPTURE_MAX_DIM) {
      snprintf(why, 256, "%s = %lld (byte %d) is not in 1 .. %lld", dim_name[i],
               (long long)dim[i], 24 + 8 * i, (long long)HOT_CAPTURE_MAX_DIM);
      return why;
    }
  }
  if (dim[1] > HOT_CAPTURE_MAX_DIM / dim[0]) {
    snprintf(why, 256, "T = B * L = %lld * %lld exceeds %lld", (long long)dim[0],
             (long long)dim[1], (long long)HOT_CAPTURE_MAX_DIM);
    return why;
  }
  if (size < HOT_CAPTURE_HEADER_BYTES + HOT_CAPTURE_SUM_BYTES ||
      payload != size - HOT_CAPTURE_HEADER_BYTES - HOT_CAPTURE_SUM_BYTES) {
    snprintf(why, 256, "truncated or extended: %llu bytes, the header's payload size (byte 56) "
             "makes %llu + %d", (unsigned long long)size, (unsigned long long)payload,
             HOT_CAPTURE_HEADER_BYTES + HOT_CAPTURE_SUM_BYTES);
    return why;
  }
  /* Sizes <= 2^31-1: products <= 2^62, their sum < 2^64; compared with the payload by division,
   * so a forged size can never make us allocate more than the file holds. */
  const uint64_t T = (uint64_t)dim[0] * (uint64_t)dim[1], O = (uint64_t)dim[2],
                 I = (uint64_t)dim[3];
  const uint64_t elems = T * I + O * I + T * O;
  if (payload % esz || elems != payload / esz) {
    snprintf(why, 256, "payload size %llu (byte 56) is not (T*I + O*I + T*O) * %llu for "
             "B=%lld L=%lld O=%lld I=%lld", (unsigned long long)payload,
             (unsigned long long)esz, (long long)dim[0], (long long)dim[1], (long long)dim[2],
             (long long)dim[3]);
    return why;
  }
  size_t bad = 0;
  if (nlen == 0 || nlen >= HOT_NAME_MAX) {
    snprintf(why, 256, "name length %llu (byte 64) is not in 1 .. %d", (unsigned long long)nlen,
             HOT_NAME_MAX - 1);
    return why;
  }
  if (!name_ok((const char *)h + CAP_NAME_OFF, (size_t)nlen, &bad)) {
    snprintf(why, 256, "name byte %zu (byte %zu) is 0x%02x, not printable ASCII", bad,
             CAP_NAME_OFF + bad, h[CAP_NAME_OFF + bad]);
    return why;
  }
  for (size_t i = CAP_NAME_OFF + (size_t)nlen; i < HOT_CAPTURE_HEADER_BYTES; ++i)
    if (h[i]) {
      snprintf(why, 256, "byte %zu (%s) is 0x%02x, must be zero", i,
               i < CAP_RESERVED_OFF ? "name padding" : "reserved", h[i]);
      return why;
    }
  memcpy(c->name, h + CAP_NAME_OFF, (size_t)nlen);
  c->name[nlen] = '\0';
  c->B = dim[0];
  c->L = dim[1];
  c->O = dim[2];
  c->I = dim[3];
  c->T = (int64_t)T;
  c->dtype = (hot_dtype)dt;
  return NULL;
}

/* Reads n elements of dtype dt into dst as fp32 through buf, hashing the bytes. 0, or -1 (errno
 * set; 0 when the file ended early). */
static int read_tensor(int fd, hash_sha256 *h, unsigned char *buf, float *dst, hot_dtype dt,
                       uint64_t n) {
  const size_t esz = elem_bytes(dt), per = CAP_CHUNK / esz;
  while (n) {
    size_t k = n < per ? (size_t)n : per;
    if (read_all(fd, buf, k * esz)) return -1;
    hash_sha256_update(h, buf, k * esz);
    if (esz == 4) {
      for (size_t i = 0; i < k; ++i) {
        uint32_t v = (uint32_t)hot_le_get(buf + 4 * i, 4);
        memcpy(&dst[i], &v, 4);
      }
    } else {
      for (size_t i = 0; i < k; ++i) {
        unsigned short v = (unsigned short)hot_le_get(buf + 2 * i, 2);
        dst[i] = dt == HOT_DT_BF16 ? hot_bf16_to_f32(v) : hot_f16_to_f32(v);
      }
    }
    dst += k;
    n -= k;
  }
  return 0;
}

/* Opens path for reading and checks it is a regular file; *fd and *size on HOT_OK. */
static hot_status capture_open(const char *path, const char *ps, int *fd_out, uint64_t *size,
                               char *err, size_t errlen) {
  char cwhy[128] = "";
  int fd = fileio_open(path, HOT_FILE_READ, 0, cwhy, sizeof cwhy);
  struct stat sb;
  if (fd < 0 || fstat(fd, &sb) != 0) {
    int e = errno;
    if (fd >= 0) close(fd);
    fileio_msgf(err, errlen, "capture %s: cannot open: %s", ps, fd < 0 ? cwhy : strerror(e));
    return HOT_ERR_IO;
  }
  if (!S_ISREG(sb.st_mode)) {
    close(fd);
    fileio_msgf(err, errlen, "capture %s: not a regular file", ps);
    return HOT_ERR_IO;
  }
  *fd_out = fd;
  *size = (uint64_t)sb.st_size;
  return HOT_OK;
}

/* Reads and checks the header of the open capture fd (`size` bytes) into hdr and out; closes
 * fd on failure. */
static hot_status capture_read_header(int fd, uint64_t size, const char *ps,
                                      unsigned char hdr[HOT_CAPTURE_HEADER_BYTES],
                                      hot_capture *out, char *err, size_t errlen) {
  char why[256];
  const size_t head = size < HOT_CAPTURE_HEADER_BYTES ? (size_t)size : HOT_CAPTURE_HEADER_BYTES;
  if (read_all(fd, hdr, head)) {
    int e = errno;
    close(fd);
    fileio_msgf(err, errlen, "capture %s: cannot read: %s", ps, e ? strerror(e) : "file shrank");
    return HOT_ERR_IO;
  }
  if (size < 8 ||
      (memcmp(hdr, MAGIC, 8) == 0 && size < HOT_CAPTURE_HEADER_BYTES + HOT_CAPTURE_SUM_BYTES)) {
    close(fd);
    fileio_msgf(err, errlen, "capture %s: truncated: %llu bytes, a capture has at least %d", ps,
             (unsigned long long)size, HOT_CAPTURE_HEADER_BYTES + HOT_CAPTURE_SUM_BYTES);
    return HOT_ERR_INVALID;
  }
  const char *bad = check_header(hdr, size, out, why);
  if (bad) {
    close(fd);
    memset(out, 0, sizeof *out);
    fileio_msgf(err, errlen, "capture %s: %s", ps, bad);
    return HOT_ERR_INVALID;
  }
  return HOT_OK;
}

/* Allocates out's tensors (n[i] elements each) and reads them and the checksum from fd, which
 * it closes; checks the SHA-256 over hdr and the payload. */
static hot_status capture_read_body(int fd, uint64_t size, const char *ps,
                                    const unsigned char hdr[HOT_CAPTURE_HEADER_BYTES],
                                    const uint64_t n[3], hot_capture *out, char *err,
                                    size_t errlen) {
  unsigned char *buf = malloc(CAP_CHUNK);
  out->x = malloc((size_t)n[0] * sizeof(float));
  out->w = malloc((size_t)n[1] * sizeof(float));
  out->g_y = malloc((size_t)n[2] * sizeof(float));
  if (!buf || !out->x || !out->w || !out->g_y) {
    close(fd);
    free(buf);
    capture_free(out);
    fileio_msgf(err, errlen, "capture %s: out of memory", ps);
    return HOT_ERR_NOMEM;
  }
  hash_sha256 h;
  hash_sha256_init(&h);
  hash_sha256_update(&h, hdr, HOT_CAPTURE_HEADER_BYTES);
  float *dst[3] = {out->x, out->w, out->g_y};
  int ok = 1;
  for (int i = 0; ok && i < 3; ++i) ok = read_tensor(fd, &h, buf, dst[i], out->dtype, n[i]) == 0;
  unsigned char sum[HASH_SHA256_BYTES], want[HASH_SHA256_BYTES];
  if (ok) ok = read_all(fd, want, sizeof want) == 0;
  int e = errno;
  close(fd);
  free(buf);
  if (!ok) {
    capture_free(out);
    fileio_msgf(err, errlen, "capture %s: cannot read: %s", ps, e ? strerror(e) : "file shrank");
    return HOT_ERR_IO;
  }
  hash_sha256_final(&h, sum);
  if (memcmp(sum, want, sizeof sum) != 0) {
    capture_free(out);
    fileio_msgf(err, errlen, "capture %s: checksum mismatch (corrupt file: the SHA-256 of bytes "
             "0..%llu differs from the last 32 bytes)", ps,
             (unsigned long long)(size - HOT_CAPTURE_SUM_BYTES - 1));
    return HOT_ERR_INVALID;
  }
  return HOT_OK;
}

int capture_read(const char *path, hot_capture *out, char *err, size_t errlen) {
  char ps[512];
  if (out) memset(out, 0, sizeof *out);
  if (err && errlen) err[0] = '\0';
  if (!path || !*path || !out) {
    fileio_msgf(err, errlen, "capture: %s", !out ? "no output given (out is NULL)"
                                              : "no file given (path is NULL or empty)");
    return HOT_ERR_INVALID;
  }
  shown(path, ps);
  int fd = -1;
  uint64_t size = 0;
  hot_status st = capture_open(path, ps, &fd, &size, err, errlen);
  if (st != HOT_OK) return st;
  unsigned char hdr[HOT_CAPTURE_HEADER_BYTES];
  st = capture_read_header(fd, size, ps, hdr, out, err, errlen);
  if (st != HOT_OK) return st;
  const uint64_t T = (uint64_t)out->T, O = (uint64_t)out->O, I = (uint64_t)out->I;
  const uint64_t n[3] = {T * I, O * I, T * O};
  /* Each count <= the file's payload elements (checked above), so these products fit size_t
   * wherever the file could be mapped; refuse otherwise rather than wrap. */
  for (int i = 0; i < 3; ++i)
    if (n[i] > SIZE_MAX / sizeof(float)) {
      close(fd);
      memset(out, 0, sizeof *out);
      fileio_msgf(err, errlen, "capture %s: %s of %llu elements does not fit this machine's memory",
               ps, TENSOR[i], (unsigned long long)n[i]);
      return HOT_ERR_NOMEM;
    }
  st = capture_read_body(fd, size, ps, hdr, n, out, err, errlen);
  if (st != HOT_OK) return st;
  float *dst[3] = {out->x, out->w, out->g_y};
  const uint64_t cols[3] = {I, I, O};
  for (int i = 0; i < 3; ++i)
    for (uint64_t k = 0; k < n[i]; ++k)
      if (!isfinite(dst[i][k])) {
        fileio_msgf(err, errlen, "capture %s: %s[%llu][%llu] is %s (a capture holds finite values)",
                 ps, TENSOR[i], (unsigned long long)(k / cols[i]),
                 (unsigned long long)(k % cols[i]), isnan(dst[i][k]) ? "NaN" : "Inf");
        capture_free(out);
        return HOT_ERR_INVALID;
      }
  return HOT_OK;
}
