/* embed.h — files compiled into the binaries (the Lua DSL and the CUDA templates).
 * The table is generated at build time by cmake/embed.cmake; it ends with a {NULL, NULL, 0} row. */
#ifndef HOT_EMBED_H
#define HOT_EMBED_H
#include <stddef.h>

typedef struct {
  const char *path;  /* relative to the source root, e.g. "templates/hot_math.cuh" */
  const char *data;  /* the bytes, NUL-terminated (the NUL is not counted in size) */
  size_t size;
} hot_embedded_file;

extern const hot_embedded_file embed_files[];

/* The embedded file at `path`, or NULL. Static storage; never free. */
const hot_embedded_file *embed_find(const char *path);

#endif
