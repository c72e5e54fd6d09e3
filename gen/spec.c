/* spec.c — the Lua side of hot: load a spec in a sandbox, validate it with the DSL (lua/hot/),
 * copy the result into plain C structs. The entry points of spec.h; the sandbox, the field-line
 * lexer, the C copy and the help text are in spec_*.c (spec_internal.h). */
#define _POSIX_C_SOURCE 200809L
#include "fileio.h"
#include "spec.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "spec_internal.h"

/* ---- messages --------------------------------------------------------------------------- */

/* spec_add_line (spec_internal.h). */
void spec_add_line(hot_diag *diag, const char *text) {
  size_t n = strlen(text), k = 0;
  char *clean = spec_malloc(n * 4 + 1);
  if (!clean) {
    if (diag) diag->oom = 1;
    return;
  }
  for (size_t i = 0; i < n; ++i) {
    unsigned char ch = (unsigned char)text[i];
    if (ch < 0x20 || ch == 0x7f) k += (size_t)snprintf(clean + k, 5, "\\%03u", ch);
    else clean[k++] = (char)ch;
  }
  clean[k] = '\0';
  diag_add(diag, "%s", clean);
  free(clean);
}


/* ---- entry points ----------------------------------------------------------------------- */


/* The message of a failed protected call of the spec (status st, message on the stack top).
 * Returns SPEC_ERR_NOMEM when the host ran out of memory, else SPEC_ERR_SPEC. */
static int failed_call(lua_State *L, int st, const sandbox *sb, const char *file, hot_diag *diag) {
  if (sb->host_oom) {
    diag_add(diag, "%s: out of memory while loading the spec", file);
    return SPEC_ERR_NOMEM;
  }
  int line = sb->last_line > 0 ? sb->last_line : 1;
  if (st == LUA_ERRMEM || sb->refused) {
    diag_add(diag, "%s:%d: spec exceeded its memory limit of %zu MiB", file, line, sb->limit >> 20);
  } else if (st == LUA_ERRERR || !lua_isstring(L, -1)) {
    diag_add(diag, "%s:%d: error while handling an error (too deep a recursion?)", file, line);
  } else {
    spec_add_line(diag, lua_tostring(L, -1));
  }
  return SPEC_ERR_SPEC;
}

/* Runs the spec chunk (already on the stack top, a function) and copies the model. */
static int run_spec(lua_State *L, sandbox *sb, const char *file, hot_model *out, hot_diag *diag) {
  /* stack: msgh, spec_env, chunk */
  lua_pushvalue(L, -2);
  lua_setupvalue(L, -2, 1); /* _ENV = spec env */
  lua_Debug ar;
  lua_pushvalue(L, -1);
  lua_getinfo(L, ">S", &ar);
  sb->spec_source = ar.source; /* kept alive by the chunk on the stack */
  /* The DSL needs to know which chunk is the spec, to name its lines. */
  lua_getfield(L, LUA_REGISTRYINDEX, "hot.dslenv");
  lua_getfield(L, -1, "require");
  lua_pushstring(L, "hot");
  int st = lua_pcall(L, 1, 1, 1);
  if (st != LUA_OK) {
    if (sb->host_oom) return failed_call(L, st, sb, file, diag);
    diag_add(diag, "%s:1: internal error loading the DSL: %s", file,
             lua_isstring(L, -1) ? lua_tostring(L, -1) : "?");
    return SPEC_ERR_SPEC;
  }
  lua_pushstring(L, ar.source);
  lua_setfield(L, -2, "_spec_source");
  /* The functions that read the verdict, kept where the spec cannot reach them. */
  lua_getfield(L, -1, "_errors");
  lua_setfield(L, LUA_REGISTRYINDEX, "hot.errorsfn");
  lua_getfield(L, -1, "_validated");
  lua_setfield(L, LUA_REGISTRYINDEX, "hot.validfn");
  lua_pop(L, 2);

  sandbox_hook(L, 1);
  st = lua_pcall(L, 0, 1, 1);
  sandbox_hook(L, 0);
  if (st != LUA_OK) return failed_call(L, st, sb, file, diag);
  int t = lua_gettop(L);
  /* The verdict: the C copy hot.model made for the returned view, and the DSL's diagnostics.
   * Nothing of the spec runs any more (the tables read are the DSL's own). */
  lua_getfield(L, LUA_REGISTRYINDEX, "hot.validfn");
  lua_pushvalue(L, t);
  st = lua_pcall(L, 1, 1, 1);
  if (st != LUA_OK) return failed_call(L, st, sb, file, diag);
  spec_copy *c = lua_touserdata(L, -1); /* kept alive at t + 1 */
  lua_getfield(L, LUA_REGISTRYINDEX, "hot.errorsfn");
  st = lua_pcall(L, 0, 1, 1);
  if (st != LUA_OK) return failed_call(L, st, sb, file, diag);
  int errs = 0;
  if (lua_istable(L, -1)) {
    lua_Integer n = (lua_Integer)lua_rawlen(L, -1);
    for (lua_Integer i = 1; i <= n; ++i) {
      if (lua_rawgeti(L, -1, i) == LUA_TSTRING) spec_add_line(diag, lua_tostring(L, -1));
      lua_pop(L, 1);
      ++errs;
    }
  }
  if (!c) {
    diag_add(diag, "%s:%d: the spec must return hot.model { ... } (got %s)", file,
             sb->last_line > 0 ? sb->last_line : 1,
             lua_type(L, t) == LUA_TTABLE ? "a table not made by hot.model" : luaL_typename(L, t));
    return SPEC_ERR_SPEC;
  }
  errs += spec_copy_check(c, file, errs, diag);
  if (errs) {
    if (spec_copy_plan_clean(c, file, diag) == 0) return SPEC_ERR_SPEC;
    diag_add(diag, "%s: out of memory while planning the layers without errors", file);
    return SPEC_ERR_NOMEM;
  }
  if (spec_copy_out(c, file, out) != 0) {
    diag_add(diag, "%s: out of memory while copying the model", file);
    return SPEC_ERR_NOMEM;
  }
  return 0;
}

/* lua_load reader: the spec text one line at a time, so that a load error without a location
 * (C stack overflow in the parser) is placed at the line being read. */
typedef struct {
  const char *text;
  size_t len, pos;
  int line;                 /* line of the last piece handed out (1-based) */
  int comment_first;        /* the first line starts with '#': handed out as its newline only */
} line_reader;

/* A reader of text as the lua interpreter reads a file: a UTF-8 byte-order mark skipped, a first
 * line starting with '#' (e.g. "#!/usr/bin/env hot-gen") read as an empty line, so that the
 * other lines keep their numbers. */
static line_reader line_reader_of(const char *text, size_t len) {
  line_reader r = {text, len, 0, 0, 0};
  if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) r.pos = 3;
  r.comment_first = r.pos < len && text[r.pos] == '#';
  return r;
}

static const char *read_line(lua_State *L, void *ud, size_t *size) {
  (void)L;
  line_reader *r = ud;
  if (r->pos >= r->len) {
    *size = 0;
    return NULL;
  }
  const char *start = r->text + r->pos;
  const char *nl = memchr(start, '\n', r->len - r->pos);
  size_t n = nl ? (size_t)(nl - start) + 1 : r->len - r->pos;
  if (r->comment_first) { /* the '#' line: its newline only (none when it is the whole text) */
    r->comment_first = 0;
    r->pos += n;
    r->line++;
    *size = nl ? 1 : 0;
    return "\n";
  }
  r->pos += n;
  r->line++;
  *size = n;
  return start;
}

typedef struct {
  sandbox *sb;
  const char *file, *text;
  size_t len;
  const char *chunk;        /* "@file" */
  hot_model *out;
  hot_diag *diag;
  int rc;                   /* the result */
} load_job;

/* The whole load as one protected function (argument: the load_job). */
static int l_load_main(lua_State *L) {
  load_job *j = lua_touserdata(L, 1);
  sandbox *sb = j->sb;
  lua_settop(L, 0);
  lua_pushcfunction(L, sandbox_msg_handler); /* index 1 */
  luaL_checkstack(L, 40, "setup");
  sandbox_build_envs(L);             /* the spec env is index 2 */
  /* How Lua names the chunk in its own messages (long paths shortened with "..."). */
  lua_Debug ar;
  if (luaL_loadbufferx(L, "", 0, j->chunk, "t") != LUA_OK) return lua_error(L);
  lua_getinfo(L, ">S", &ar);
  snprintf(sb->spec_short, sizeof sb->spec_short, "%s", ar.short_src);
  sb->spec_file = j->file;
  sb->text = j->text;
  sb->text_len = j->len;
  line_reader rd = line_reader_of(j->text, j->len);
  int st = lua_load(L, read_line, &rd, j->chunk, "t");
  if (st == LUA_OK) {
    j->rc = run_spec(L, sb, j->file, j->out, j->diag);
  } else if (sb->host_oom || st == LUA_ERRMEM) {
    sb->last_line = rd.line;
    j->rc = failed_call(L, st, sb, j->file, j->diag);
  } else {
    const char *msg = lua_isstring(L, -1) ? lua_tostring(L, -1) : "syntax error";
    int line = rd.line > 0 ? rd.line : 1;
    size_t skip = sandbox_location_prefix(sb, msg, &line);
    lua_pushfstring(L, "%s:%d: %s%s", j->file, line, msg + skip,
                    strcmp(msg + skip, "C stack overflow") == 0 ? " (nesting too deep)" : "");
    spec_add_line(j->diag, lua_tostring(L, -1));
  }
  return 0;
}

static int load_common(const char *file, const char *text, size_t len, const spec_limits *lim,
                       hot_model *out, hot_diag *diag) {
  memset(out, 0, sizeof *out);
  if (len > 0 && text[0] == LUA_SIGNATURE[0]) {
    diag_add(diag, "%s:1: precompiled (bytecode) specs are not accepted; give the Lua source", file);
    return SPEC_ERR_SPEC;
  }
  sandbox sb;
  spec_limits grown = lim ? *lim : spec_default_limits();
  /* The parsed chunk and the tables of a spec written layer by layer grow with its text: the
   * memory limit grows with it (the text itself is at most 16 MiB). */
  if (grown.memory_bytes < SIZE_MAX / 2 - SPEC_MEMORY_PER_BYTE * len)
    grown.memory_bytes += SPEC_MEMORY_PER_BYTE * len;
  lua_State *L = sandbox_open(&sb, &grown);
  if (!L) {
    diag_add(diag, "%s: cannot create a Lua state (out of memory)", file);
    return SPEC_ERR_NOMEM;
  }
  char *chunk = spec_malloc(strlen(file) + 2);
  if (!chunk) {
    lua_close(L);
    diag_add(diag, "%s: out of memory while loading the spec", file);
    return SPEC_ERR_NOMEM;
  }
  chunk[0] = '@';
  memcpy(chunk + 1, file, strlen(file) + 1);
  load_job job = {&sb, file, text, len, chunk, out, diag, SPEC_ERR_SPEC};
  /* Everything runs in one protected call: any allocation failure is an error, never a panic. */
  lua_pushcfunction(L, l_load_main);
  lua_pushlightuserdata(L, &job);
  int st = lua_pcall(L, 1, 0, 0);
  if (st != LUA_OK) {
    if (sb.host_oom || sb.refused || st == LUA_ERRMEM) job.rc = failed_call(L, st, &sb, file, diag);
    else diag_add(diag, "%s:1: internal error: %s", file, lua_isstring(L, -1) ? lua_tostring(L, -1) : "?");
  }
  lua_close(L);
  free(chunk);
  if (job.rc != 0) spec_model_free(out);
  return job.rc;
}

int spec_load_string(const char *chunkname, const char *text, size_t len, const spec_limits *limits,
                     hot_model *out, hot_diag *diag) {
  if (!out || !text) {
    diag_add(diag, "spec_load_string: NULL argument");
    return SPEC_ERR_SPEC;
  }
  return load_common(chunkname ? chunkname : "spec", text, len, limits, out, diag);
}

int spec_load_file(const char *path, const spec_limits *limits, hot_model *out, hot_diag *diag) {
  if (!out || !path) {
    diag_add(diag, "spec_load_file: NULL argument");
    return SPEC_ERR_SPEC;
  }
  memset(out, 0, sizeof *out);
  char why[128];
  /* a stream, read once (a pipe or "-" for stdin too), into memory with a size bound; then
   * loaded from the buffer under the file's name ("stdin" for "-") for messages */
  FILE *f = fileio_fopen_stream(path, why, sizeof why);
  if (!f) {
    diag_add(diag, "%s: cannot open: %s", path, why);
    return SPEC_ERR_SPEC;
  }
  size_t cap = 1 << 16, len = 0;
  char *buf = spec_malloc(cap);
  int nomem = !buf;
  while (buf) {
    if (len == cap) {
      if (cap >= (16u << 20)) {
        fclose(f);
        free(buf);
        diag_add(diag, "%s: spec larger than 16 MiB", path);
        return SPEC_ERR_SPEC;
      }
      char *g = spec_realloc(buf, cap * 2);
      if (!g) {
        nomem = 1;
        break;
      }
      buf = g;
      cap *= 2;
    }
    size_t n = fread(buf + len, 1, cap - len, f);
    len += n;
    if (n == 0) break;
  }
  int bad = ferror(f);
  fclose(f);
  if (nomem) {
    free(buf);
    diag_add(diag, "%s: out of memory while reading the file", path);
    return SPEC_ERR_NOMEM;
  }
  if (bad) {
    free(buf);
    diag_add(diag, "%s: cannot read the file", path);
    return SPEC_ERR_SPEC;
  }
  int rc = load_common(strcmp(path, "-") == 0 ? "stdin" : path, buf, len, limits, out, diag);
  free(buf);
  return rc;
}

void spec_model_free(hot_model *m) {
  if (!m) return;
  free(m->layers);
  free(m->sweep);
  memset(m, 0, sizeof *m);
}

const char *spec_layer_name(const void *m, int i) {
  const hot_model *mm = m;
  return mm && i >= 0 && i < mm->n_layers ? mm->layers[i].name : "?";
}

int spec_find_layer(const hot_model *m, const char *name) {
  if (!m || !name) return -1;
  for (int i = 0; i < m->n_layers; ++i)
    if (strcmp(m->layers[i].name, name) == 0) return i;
  return -1;
}

/* ---- names and paths -------------------------------------------------------------------- */


int spec_path_join(char *out, size_t n, const char *dir, const char *component) {
  if (!out || !n) return -1;
  out[0] = '\0';
  if (!dir || !*dir || !component || !*component || strchr(component, '/') ||
      strcmp(component, ".") == 0 || strcmp(component, "..") == 0)
    return -1;
  for (const char *p = component; *p; ++p)
    if ((unsigned char)*p < 0x20 || *p == 0x7f) return -1;
  size_t dl = strlen(dir);
  int r = snprintf(out, n, "%s%s%s", dir, dir[dl - 1] == '/' ? "" : "/", component);
  if (r < 0 || (size_t)r >= n) {
    out[0] = '\0';
    return -1;
  }
  return 0;
}

