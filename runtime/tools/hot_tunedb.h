/* hot_tunedb.h — the door of hot-tune's write side (tune/tunedb_write.c) into the tuning
 * database's row and schema definitions, which the core owns (runtime/tunedb_schema.h): the
 * same table of columns makes the read side's statements in libhot and the write side's in the
 * tool. Nothing else includes it. */
#ifndef HOT_TOOLS_TUNEDB_H
#define HOT_TOOLS_TUNEDB_H
#include "../tunedb_schema.h"
#endif
