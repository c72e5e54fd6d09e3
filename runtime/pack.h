/* pack.h — the kernel pack: every compiled program of a spec, for a set of archs, in one file
 * that a deployment ships beside its application so that libhot never compiles
 * (hot-gen SPEC --compile ARCHS --pack FILE writes it; HOT_KERNEL_PACK or hot_ctx_load_pack
 * loads it; the kernel cache serves its entries by key, cache.h).
 *
 * File format, version 1 (all integers little-endian):
 *   header, 56 bytes:
 *     0   8  magic "HOTPACK\0"
 *     8   4  format version (1)
 *    12   4  number of entries N (at most HOT_PACK_MAX_ENTRIES)
 *    16   8  body size in bytes (the file is exactly 56 + body size bytes)
 *    24  32  SHA-256 of the body
 *   body: N entries, each
 *     64       cache key, lower-case hex (cache.h: SHA-256 of generator version, the compiler's
 *              fixed options, arch, extra options, kernel names, program name and source)
 *     1 + n    compiler version ("nvrtc-13.0"), n <= 31, [A-Za-z0-9._-]
 *     1 + n    arch (a plan-table name), n <= 15, valid per nvrtc_arch_valid
 *     4        kernel count K, 1 .. HOT_MAX_PROGRAM_KERNELS
 *     K times  2 + n name (n 1 .. 255), then 5 x int32: registers, stack, spill stores, spill
 *              loads, shared bytes (each >= -1)
 *     8        compile time in microseconds (as compiled on the machine that built the pack)
 *     8 + n    CUBIN (n >= 1, at most HOT_PACK_MAX_BYTES)
 *     8 + n    compile log (n >= 0)
 * Nothing may follow the last entry. A reader checks every length against what is left before
 * using it, the checksum before parsing, and every field's range: a truncated, corrupt or
 * foreign file is an error naming the file and what is wrong, never a crash.
 *
 * A pack entry whose key or compiler version differs from what the cache asks for (another
 * NVRTC, other options, another source) is simply not used: that kernel compiles as usual.
 */
#ifndef HOT_PACK_H
#define HOT_PACK_H

#include <stddef.h>

#include "nvrtc.h"

#define HOT_PACK_VERSION 1
#define HOT_PACK_HEADER_BYTES 56
#define HOT_PACK_MAX_ENTRIES 65536
#define HOT_PACK_MAX_BYTES (1ull << 32) /* 4 GiB: a bound on the file and on any one field */

typedef struct hot_pack hot_pack;

/* One entry as written (all pointers borrowed for the call). */
typedef struct {
  const char *key;                 /* 64 lower-case hex digits */
  const char *compiler;            /* compiler version */
  const char *arch;
  const hot_kernel_info *kernels;  /* n_kernels, names non-empty */
  size_t n_kernels;
  const unsigned char *cubin;
  size_t cubin_size;
  const char *log;                 /* NULL counts as "" */
  double compile_ms;
} hot_pack_entry;

/* Writes the n entries (entries with an equal key and compiler are written once) to path,
 * through a temp file in the same directory renamed into place. RT_OK, RT_ERR_INVALID (a bad
 * entry: its index and what is wrong), RT_ERR_IO (names the file and the system's reason),
 * RT_ERR_NOMEM. */
rt_status pack_write(const char *path, const hot_pack_entry *entries, size_t n, char *err,
                     size_t errlen);

/* Parses a pack image of `size` bytes (copied: data is borrowed for the call). `name` (the file)
 * starts every message. On RT_OK *out is a new pack (pack_free). RT_ERR_INVALID when the image
 * is not a valid pack (the message says why and at which byte offset), RT_ERR_NOMEM. */
rt_status pack_parse(const unsigned char *data, size_t size, const char *name, hot_pack **out,
                     char *err, size_t errlen);

/* Reads and parses the file at path. As pack_parse, plus RT_ERR_IO (missing, unreadable, not a
 * regular file, larger than HOT_PACK_MAX_BYTES; names the file). */
rt_status pack_load(const char *path, hot_pack **out, char *err, size_t errlen);

/* NULL-safe. */
void pack_free(hot_pack *p);

/* Number of entries. */
size_t pack_count(const hot_pack *p);

/* The entry i (< pack_count) as a borrowed view (valid until pack_free). */
void pack_entry(const hot_pack *p, size_t i, hot_pack_entry *out);

/* Finds the entry of key `key` (hex) whose compiler version is `compiler` (NULL or "": any) and
 * whose kernel names are `names` (n, in order). 1: found, *res filled with a malloc'd copy
 * (nvrtc_result_free; phases_known 0) and *compiler_out (32 bytes) its compiler version;
 * 0: no such entry; -1: out of memory. */
int pack_lookup(const hot_pack *p, const char *key, const char *compiler,
                const char *const *names, size_t n, hot_compile_result *res,
                char compiler_out[32]);

#endif
