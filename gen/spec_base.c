/* spec_base.c — the bottom layer of spec loading, called by the other spec files and calling
 * none of them: the counted allocator (and the tests' allocation-failure hook), the default
 * limits, the name rule, and the sandbox a Lua state belongs to. */
#include <stdlib.h>

#include <lua.h>

#include "spec_internal.h"

/* The allocation-failure hook of spec.h (tests only). */
static _Atomic long long g_fail_after = -1, g_alloc_count = 0;

void spec_test_fail_allocs_after(long long n) { g_fail_after = n; }
long long spec_test_alloc_count(void) { return g_alloc_count; }

/* Counts an allocation; 1 when the test hook says it must fail. */
static int injected_failure(void) {
  ++g_alloc_count;
  if (g_fail_after < 0) return 0;
  if (g_fail_after == 0) return 1;
  --g_fail_after;
  return 0;
}

void *spec_malloc(size_t n) { return injected_failure() ? NULL : malloc(n); }

void *spec_realloc(void *p, size_t n) { return injected_failure() ? NULL : realloc(p, n); }

spec_limits spec_default_limits(void) {
  spec_limits l = {64u << 20, 50000000LL, 60.0};
  return l;
}

int spec_name_valid(const char *s) {
  if (!s || !*s) return 0;
  size_t n = 0;
  for (const char *p = s; *p; ++p, ++n) {
    unsigned char ch = (unsigned char)*p;
    int alnum = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
    if (!(alnum || ch == '_' || (p != s && (ch == '.' || ch == '-')))) return 0;
  }
  return n < HOT_NAME_MAX;
}

sandbox *sandbox_of(lua_State *L) {
  void *ud;
  lua_getallocf(L, &ud);
  return ud;
}
