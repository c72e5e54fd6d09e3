// emu_sched.h — the deterministic scheduler of the SIMT emulators (kemu.h for the element-wise
// and transform templates, tools/gemm-emu/emu.cpp for the GEMMs).
//
// Every CUDA thread of a block is a fiber (its own stack, a user-space context switch); one OS
// thread runs them, one at a time. A fiber runs until it reaches a scheduling point — a barrier,
// a warp collective, a cp.async / wgmma operation, a global load (__ldg), an atomic — where the
// scheduler decides, from a seeded PRNG and the schedule's policy, which fiber runs next. So the
// interleaving is a pure function of the schedule seed: the same seed gives the same interleaving
// and the same result at any machine load, and a race that one schedule exposes is exposed on
// every run. Nothing depends on wall-clock time or on the OS scheduler.
//
// Schedules (EMU_SEEDS, a list of seeds; each run of a driver repeats its check once per seed):
//   seed 0  "lowest first": the runnable fiber with the lowest thread index always runs, and is
//           never preempted at an optional point: thread 0 (then warp 0) runs as far ahead of the
//           others as the synchronization lets it — a missing barrier reads data not yet written.
//   seed 1  "highest first": the same from the last thread down (the opposite pairs of a race).
//   seed 2, 4, ...  "warp priorities": every warp gets a random priority, the highest runnable
//           warp runs (its lanes lowest first); at optional points the running warp's priority
//           is redrawn now and then (a probabilistic concurrency test: long run-aheads of random
//           warps, preemptions at random depths).
//   seed 3, 5, ...  "random": a random runnable fiber after every barrier or collective, and a
//           switch to a random one at 1 in 8 optional points.
// The grid's blocks run one after another, in index order for seed 0 and in a seeded random
// order otherwise (a kernel must not depend on block order).
//
// A barrier or collective that can never complete (divergent __syncthreads, a lane that exited)
// is found at once: no fiber is runnable while some have not finished; the run stops with
// "EMU ERROR: deadlock" naming the waiting threads.
#pragma once
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <sys/mman.h>
#include <vector>
// The context switch: a few lines of assembly on x86-64 (no system call), else POSIX ucontext
// (also forced by -DEMU_UCONTEXT, which tests the portable path on x86-64).
#if defined(__x86_64__) && !defined(EMU_UCONTEXT)
#define EMU_ASM_SWITCH 1
#else
#define EMU_ASM_SWITCH 0
#include <ucontext.h>
#endif

struct emu_dim3 { unsigned x, y, z; };
// The running fiber's thread and block index (set by the scheduler at every switch).
static emu_dim3 threadIdx, blockIdx;
static emu_dim3 gridDim, blockDim;

static unsigned long long g_emu_seed_shown; // the schedule seed, for error messages
static void emu_fatal(const char *m) {
  std::fprintf(stderr, "EMU ERROR (schedule %llu): %s\n", g_emu_seed_shown, m);
  std::fflush(stdout);
  std::fflush(stderr);
  std::_Exit(2);
}

// ---- user-space context switch ----------------------------------------------------------------
#if EMU_ASM_SWITCH
// hot_emu_swap(save, to): pushes the callee-saved registers of the System V ABI, stores the stack
// pointer in *save, loads `to` and pops the registers of the context saved there. A new fiber's
// stack is prepared so that the pops and the `ret` enter its entry function with the alignment
// of a call (rsp % 16 == 8).
extern "C" void hot_emu_swap(void **save, void *to);
asm(".text\n"
    ".globl hot_emu_swap\n"
    ".type hot_emu_swap,@function\n"
    "hot_emu_swap:\n"
    "  pushq %rbp\n  pushq %rbx\n  pushq %r12\n  pushq %r13\n  pushq %r14\n  pushq %r15\n"
    "  movq %rsp, (%rdi)\n"
    "  movq %rsi, %rsp\n"
    "  popq %r15\n  popq %r14\n  popq %r13\n  popq %r12\n  popq %rbx\n  popq %rbp\n"
    "  ret\n"
    ".size hot_emu_swap, .-hot_emu_swap\n");
#endif

namespace emu {

enum { ST_RUN, ST_BLOCKED, ST_DONE };
enum policy { POL_LOW, POL_HIGH, POL_PRIO, POL_RANDOM };

struct fiber {
  char *mem = nullptr; // stack mapping (guard page at the bottom)
#if EMU_ASM_SWITCH
  void *sp = nullptr;
#else
  ucontext_t uc;
#endif
  int state = ST_DONE;
  const char *what = ""; // what a blocked fiber waits for
};

static const size_t k_stack = 256 * 1024; // per fiber; untouched pages cost nothing
static std::vector<fiber> g_fib;
static int g_n = 0, g_cur = -1, g_live = 0;
static const std::function<void()> *g_kernel;
static void (*g_exit_hook)(int tid); // runs in the fiber after the kernel returns
#if EMU_ASM_SWITCH
static void *g_main_sp;
#else
static ucontext_t g_main_uc;
#endif

// schedule state
static uint64_t g_seed = 0, g_rng = 1;
static int g_policy = POL_LOW;
static std::vector<unsigned> g_wprio; // per warp (POL_PRIO)
static long long g_switches = 0; // fibers resumed since set_seed
static uint64_t g_trace = 0; // FNV-1a over the sequence of fibers run since set_seed

static uint64_t rng() { // splitmix64
  uint64_t z = (g_rng += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Selects the schedule of the following launches: policy from the seed (see the top of the file),
// PRNG seeded from it.
static void set_seed(uint64_t seed) {
  g_seed = seed;
  g_emu_seed_shown = seed;
  g_rng = seed * 0x2545f4914f6cdd1dull + 0x1234567ull;
  g_trace = 0xcbf29ce484222325ull;
  g_switches = 0;
  g_policy = seed == 0 ? POL_LOW : seed == 1 ? POL_HIGH : seed % 2 == 0 ? POL_PRIO : POL_RANDOM;
}
// The interleaving since set_seed, as a fingerprint: equal seeds must give equal fingerprints.
static uint64_t trace() { return g_trace; }
static const char *policy_name() {
  static const char *n[] = {"lowest-first", "highest-first", "warp-priority", "random"};
  return n[g_policy];
}

static unsigned prio_of(int t) { return (g_wprio[(size_t)t >> 5] << 8) | (unsigned)(255 - (t & 31)); }

// The fiber the policy runs next, or -1 when none is runnable.
static int pick() {
  int best = -1;
  switch (g_policy) {
  case POL_LOW:
    for (int i = 0; i < g_n; ++i)
      if (g_fib[i].state == ST_RUN) return i;
    return -1;
  case POL_HIGH:
    for (int i = g_n - 1; i >= 0; --i)
      if (g_fib[i].state == ST_RUN) return i;
    return -1;
  case POL_PRIO: {
    unsigned bp = 0;
    for (int i = 0; i < g_n; ++i)
      if (g_fib[i].state == ST_RUN && (best < 0 || prio_of(i) > bp)) best = i, bp = prio_of(i);
    return best;
  }
  default: {
    int cnt = 0;
    for (int i = 0; i < g_n; ++i) cnt += g_fib[i].state == ST_RUN;
    if (!cnt) return -1;
    int k = (int)(rng() % (uint64_t)cnt);
    for (int i = 0; i < g_n; ++i)
      if (g_fib[i].state == ST_RUN && k-- == 0) return i;
    return -1;
  }
  }
}

static void switch_to_main() {
#if EMU_ASM_SWITCH
  hot_emu_swap(&g_fib[g_cur].sp, g_main_sp);
#else
  swapcontext(&g_fib[g_cur].uc, &g_main_uc);
#endif
  threadIdx = {(unsigned)g_cur, 0, 0}; // resumed: the scheduler set g_cur to this fiber
}

// An optional scheduling point: the policy may let another fiber run first. (Only a wake makes
// a fiber runnable, and every wake is followed by reschedule() or by the waker's exit, so under
// lowest-first and highest-first the running fiber is still the one the policy wants here.)
static void yield() {
  if (g_cur < 0) return;
  bool sw = false;
  if (g_policy == POL_PRIO) {
    if (rng() % 64 == 0) {
      g_wprio[(size_t)g_cur >> 5] = (unsigned)(rng() & 0xffffff);
      sw = pick() != g_cur;
    }
  } else if (g_policy == POL_RANDOM) {
    sw = rng() % 8 == 0;
  }
  if (sw) switch_to_main();
}

// Blocks the running fiber until wake(); `what` names the wait in a deadlock report.
static void block(const char *what) {
  g_fib[g_cur].state = ST_BLOCKED;
  g_fib[g_cur].what = what;
  switch_to_main();
}
static void wake(int t) { g_fib[t].state = ST_RUN; }

// After waking others (a barrier completed): the point where the policy re-decides.
static void reschedule() {
  if (g_cur < 0) return;
  if (g_policy == POL_RANDOM || pick() != g_cur) switch_to_main();
}

static void entry() {
  (*g_kernel)();
  if (g_exit_hook) g_exit_hook(g_cur);
  g_fib[g_cur].state = ST_DONE;
  --g_live;
  switch_to_main(); // never resumed
  emu_fatal("finished fiber resumed");
}
#if !EMU_ASM_SWITCH
static void entry_uc() { entry(); }
#endif

static void prepare(fiber &f) {
  if (!f.mem) {
    void *m = mmap(nullptr, k_stack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (m == MAP_FAILED) emu_fatal("cannot map a fiber stack");
    f.mem = (char *)m;
    mprotect(f.mem, 4096, PROT_NONE); // overflow faults instead of corrupting a neighbour
  }
#if EMU_ASM_SWITCH
  uintptr_t top = ((uintptr_t)(f.mem + k_stack)) & ~(uintptr_t)15;
  void **s = (void **)top;
  *--s = nullptr;              // return address of entry (never used)
  *--s = (void *)&entry;       // popped by `ret`
  for (int i = 0; i < 6; ++i) *--s = nullptr; // rbp rbx r12 r13 r14 r15
  f.sp = s;
#else
  getcontext(&f.uc);
  f.uc.uc_stack.ss_sp = f.mem + 4096;
  f.uc.uc_stack.ss_size = k_stack - 4096;
  f.uc.uc_link = nullptr;
  makecontext(&f.uc, entry_uc, 0);
#endif
  f.state = ST_RUN;
  f.what = "";
}

// Runs kernel() once for each of `threads` fibers (thread indices 0 .. threads-1) of the current
// block (blockIdx is the caller's) until all have returned. exit_hook(tid) runs in each fiber
// after its kernel() returns. Stops the process on a deadlock.
static void run_block(int threads, const std::function<void()> &kernel, void (*exit_hook)(int)) {
  if ((int)g_fib.size() < threads) g_fib.resize((size_t)threads);
  g_wprio.assign((size_t)(threads + 31) / 32, 0);
  for (auto &p : g_wprio) p = (unsigned)(rng() & 0xffffff);
  g_n = threads;
  g_live = threads;
  g_kernel = &kernel;
  g_exit_hook = exit_hook;
  for (int i = 0; i < threads; ++i) prepare(g_fib[(size_t)i]);
  for (;;) {
    int next = pick();
    if (next < 0) {
      if (g_live == 0) break;
      std::string m = "deadlock: no thread can run; waiting:";
      int shown = 0;
      for (int i = 0; i < g_n; ++i)
        if (g_fib[i].state == ST_BLOCKED && shown++ < 8)
          m += " t" + std::to_string(i) + " (" + g_fib[i].what + ")";
      m += " (block " + std::to_string(blockIdx.x) + "," + std::to_string(blockIdx.y) + ")";
      emu_fatal(m.c_str());
    }
    g_cur = next;
    threadIdx = {(unsigned)next, 0, 0};
    ++g_switches;
    g_trace = (g_trace ^ (uint64_t)next) * 0x100000001b3ull;
#if EMU_ASM_SWITCH
    hot_emu_swap(&g_main_sp, g_fib[(size_t)next].sp);
#else
    swapcontext(&g_main_uc, &g_fib[(size_t)next].uc);
#endif
  }
  g_cur = -1;
}

// The order in which a grid's n blocks run: natural for seed 0, a seeded permutation otherwise.
static std::vector<long> block_order(long n) {
  std::vector<long> o((size_t)n);
  for (long i = 0; i < n; ++i) o[(size_t)i] = i;
  if (g_seed != 0)
    for (long i = n - 1; i > 0; --i) std::swap(o[(size_t)i], o[(size_t)(rng() % (uint64_t)(i + 1))]);
  return o;
}

// A barrier over `live` participants of the running block; a participant that exits leaves it
// (as __syncthreads does on sm_70+ for exited threads).
struct barrier {
  int live = 0, count = 0, exited = 0;
  const char *name = "barrier";
  std::vector<int> waiters;
  void init(int n, const char *nm) { live = n; count = 0; exited = 0; name = nm; waiters.clear(); }
  void release() {
    count = 0;
    for (int t : waiters) wake(t);
    waiters.clear();
  }
  void wait() {
    if (++count == live) {
      release();
      reschedule();
    } else {
      waiters.push_back(g_cur);
      block(name);
    }
  }
  void leave() {
    --live;
    ++exited;
    if (count > 0 && count == live) release();
  }
};

// The seeds of EMU_SEEDS ("0 1 2 3"; default `def`).
static std::vector<uint64_t> seeds_from_env(const char *def) {
  const char *s = std::getenv("EMU_SEEDS");
  std::vector<uint64_t> out;
  std::string str = s && *s ? s : def;
  size_t i = 0;
  while (i < str.size()) {
    while (i < str.size() && (str[i] == ' ' || str[i] == ',')) ++i;
    if (i >= str.size()) break;
    // decimal only: the scripts hand the seeds over through tools/lib/num.sh's num_list
    char *end;
    if (str[i] < '0' || str[i] > '9') emu_fatal("EMU_SEEDS: expected a list of decimal numbers");
    errno = 0;
    unsigned long long v = std::strtoull(str.c_str() + i, &end, 10);
    if (errno || (*end && *end != ' ' && *end != ','))
      emu_fatal("EMU_SEEDS: expected a list of decimal numbers");
    out.push_back(v);
    i = (size_t)(end - str.c_str());
  }
  if (out.empty()) emu_fatal("EMU_SEEDS: empty");
  return out;
}

} // namespace emu
