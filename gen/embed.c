/* embed.c — lookup in the table of embedded files (see embed.h). */
#include "embed.h"

#include <string.h>

const hot_embedded_file *embed_find(const char *path) {
  if (!path) return NULL;
  for (const hot_embedded_file *f = embed_files; f->path; ++f)
    if (strcmp(f->path, path) == 0) return f;
  return NULL;
}
