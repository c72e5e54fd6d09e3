/* capture.h — reading a layer capture: the x, w and g_y of one backward of a linear layer as
 * written by hot_capture_write (hot.h) or the Python bridge (hot.capture), so that tools can
 * measure a setting's error on real tensors. The file format, byte by byte: docs/capture.md.
 *
 * Format version 1 (all integers little-endian; the header is HOT_CAPTURE_HEADER_BYTES):
 *     0   8  magic "HOTCAP" then two zero bytes
 *     8   4  format version (1)
 *    12   4  header size (160)
 *    16   4  dtype (0 f32, 1 bf16, 2 f16: hot_dtype)
 *    20   4  element size in bytes (4 for f32, 2 for bf16/f16)
 *    24   8  B (batch), signed, 1 .. 2^31-1
 *    32   8  L (tokens per sample), 1 .. 2^31-1; T = B * L <= 2^31-1
 *    40   8  O (out_features), 1 .. 2^31-1
 *    48   8  I (in_features), 1 .. 2^31-1
 *    56   8  payload size in bytes: (T*I + O*I + T*O) * element size
 *    64   4  name length n, 1 .. HOT_NAME_MAX-1
 *    68  64  name: n printable ASCII bytes (0x20 .. 0x7e), then zero bytes
 *   132  28  reserved, zero
 *   160      payload: x (T x I), w (O x I), g_y (T x O), row-major, each element little-endian
 *            (f32: IEEE binary32; bf16 / f16: the 16-bit pattern)
 *   end-32  32  SHA-256 of every byte before it (header and payload)
 * The file is exactly 160 + payload + 32 bytes; every value is finite.
 */
#ifndef HOT_CAPTURE_H
#define HOT_CAPTURE_H

#include <stddef.h>
#include <stdint.h>

#include "hot.h"

#define HOT_CAPTURE_VERSION 1
#define HOT_CAPTURE_HEADER_BYTES 160
#define HOT_CAPTURE_SUM_BYTES 32                 /* the trailing SHA-256 */
#define HOT_CAPTURE_MAX_DIM ((int64_t)0x7fffffff) /* bound of B, L, O, I and T */

/* A capture read into memory: the sizes, the dtype the tensors were stored in, and fp32 copies
 * of the tensors (bf16 and f16 converted exactly). Owned by the caller: capture_free. */
typedef struct {
  char name[HOT_NAME_MAX];  /* the layer's name, NUL-terminated */
  int64_t B, L, O, I;       /* batch, tokens per sample, out_features, in_features */
  int64_t T;                /* B * L rows of x and g_y */
  hot_dtype dtype;          /* dtype of the stored tensors (the layer's input dtype) */
  float *x;                 /* T x I, row-major (malloc'd) */
  float *w;                 /* O x I */
  float *g_y;               /* T x O */
} hot_capture;

/* Reads and validates the capture file at path into *out (zeroed first, so capture_free
 * is safe after any return). Validated before anything large is allocated: a regular file, the
 * magic, version, header size, dtype and element size, each size in 1 .. 2^31-1 and T too,
 * every product checked by division against the file's size, the payload size field, the file
 * size equal to header + payload + checksum exactly, the name and the zero padding; then the
 * tensors are read (the fp32 copies take at most twice the file's size), the SHA-256 over
 * header and payload is compared, and every value must be finite.
 * Returns HOT_OK (0) or: HOT_ERR_INVALID (NULL path or out; a file that is not a valid capture:
 * foreign, truncated, extended, corrupt, a bad field or a non-finite value), HOT_ERR_IO
 * (missing, unreadable, not a regular file), HOT_ERR_NOMEM. On an error err holds one line
 * starting "capture <path>: " that says what is wrong (field, byte offset or element). */
int capture_read(const char *path, hot_capture *out, char *err, size_t errlen);

/* Frees the tensors of c and zeroes it. NULL-safe; safe on a zeroed struct. */
void capture_free(hot_capture *c);

#endif
