/* cache_file.h — the kernel cache's entry files: key digests, the entry format (encode/decode,
 * checksums) and their safe I/O. The table, the LRU bound and the compile-on-miss logic are
 * cache.c's; this file knows nothing of them.
 *
 * Entry file: a 104-byte header
 *   [0, 8)    magic "HOTKCACH"
 *   [8, 12)   format version (HOT_KCACHE_FORMAT), little endian
 *   [12, 16)  header length (104)
 *   [16, 24)  record length, [24, 32) CUBIN length, [32, 40) log length
 *   [40, 72)  SHA-256 of (key, compiler version): an entry answers one request only
 *   [72, 104) SHA-256 of everything after the header
 * then the readable text record (key, generator, compiler, arch, options, per-kernel ptxas
 * figures), the CUBIN and the compile log.
 *
 * Reading never blocks and never follows a link: the entry is opened with O_NONBLOCK|O_NOFOLLOW
 * and accepted only when fstat says it is a regular file (a FIFO, socket, device, directory or
 * symbolic link in its place is a reject, i.e. a miss). Writing goes to a temp file in the same
 * directory and is rename()d into place (readers see the old entry, the new one or none). When a
 * directory occupies the entry's name (rename cannot replace it), the directory is removed if it
 * is empty, otherwise moved aside to ".displaced-<name>-<pid>-<n>" in the cache directory (its
 * content is kept for its owner; the cache never deletes what it did not write), and the rename
 * is retried; any other file type is replaced by the rename itself. */
#ifndef HOT_CACHE_FILE_H
#define HOT_CACHE_FILE_H

#include <stddef.h>

#include "hash.h"
#include "nvrtc.h"

#define CACHE_FILE_HEADER_BYTES 104
#define CACHE_FILE_MAX_BYTES (1ull << 30) /* larger files are not entries: a reject */

/* Outcomes of cache_file_read. */
enum { CF_OK = 0, CF_MISSING = -1, CF_REJECT = -2, CF_NOMEM = -3 };

/* What an entry's record names besides the request itself. Borrowed. */
typedef struct {
  const char *generator;      /* generator version */
  const char *fixed_options;  /* the compiler's fixed options */
  const char *compiler;       /* compiler version ("nvrtc-13.0") */
  const char *key_hex;        /* hex of the request key */
} cache_file_id;

/* The request key: SHA-256 over the format tag, generator version, the compiler's fixed options,
 * arch, options, kernel names, program name and source (length-prefixed fields). */
void cache_file_key(const char *generator, const char *fixed_options, const hot_kernel_source *src,
                    unsigned char h[HASH_SHA256_BYTES]);

/* Writes an entry for (h, id->compiler) holding res at `path` inside `dir` (temp file + rename,
 * obstruction repaired as above). 0, or -1 when the entry could not be written (errno set; the
 * directory is left as it was, apart from a moved-aside obstruction). */
int cache_file_write(const char *dir, const char *path, const cache_file_id *id,
                     const unsigned char h[HASH_SHA256_BYTES], const hot_kernel_source *src,
                     const hot_compile_result *res);

/* Reads and verifies the entry at path for key h under compiler version ver. CF_OK (*out filled,
 * the caller frees it with nvrtc_result_free), CF_MISSING (no such file or unreadable),
 * CF_REJECT (not a regular file, wrong size, magic, format, key, checksum or record),
 * CF_NOMEM. */
int cache_file_read(const char *path, const unsigned char h[HASH_SHA256_BYTES], const char *ver,
                    const hot_kernel_source *src, hot_compile_result *out);

#endif
