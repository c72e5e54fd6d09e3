// memstat.h — memory-access counters for the SIMT emulators (kemu.h, tools/gemm-emu/emu.cpp,
// tools/tma-emu/tma_emu.cpp): what a kernel's addresses alone decide about its speed.
//
// Two layers:
//  1. Pure functions of one warp-level request (the byte addresses and widths of its active
//     lanes), the hardware rules written down once (docs/gpu-model.md):
//     - shared memory: 32 banks of 4 bytes; a request is served in phases of lanes — all 32 lanes
//       for accesses of up to 4 bytes, half warps (16 lanes) for 8 bytes, quarter warps (8 lanes)
//       for 16 bytes (CUDA C++ Programming Guide, "Shared Memory", compute capability 5.x+);
//       ldmatrix: one phase per 8x8 matrix (the 8 row addresses of lanes 8j..8j+7, 16 bytes
//       each); a wgmma's descriptor reads likewise, one phase per 8 x 16-byte core matrix. A phase takes as many wavefronts as the largest number of DISTINCT 4-byte words
//       any one bank holds among its accesses (the same word is a broadcast). Ideal: the
//       distinct words of the phase over 32, rounded up. bank conflicts = wavefronts - ideal,
//       what Nsight Compute reports as l1tex__data_bank_conflicts_pipe_lsu_mem_shared_*.
//     - global memory: the distinct 32-byte sectors the active lanes' bytes touch, against the
//       ideal: the distinct bytes over 32, rounded up (every byte moved was asked for).
//  2. A recorder (EMU_MEMSTAT builds only): the emulators call memstat::note() for every access
//     of the template's code — explicitly in the PTX wrappers (ldmatrix, cp.async, TMA), and
//     through GCC's ThreadSanitizer instrumentation (-fsanitize=thread without its runtime: the
//     __tsan_readN / __tsan_writeN hooks below) for every plain load and store. A site is the
//     instruction (return address), reported as the template's file:line (addr2line; only sites
//     under templates/ count — the emulator's own accesses are dropped). The k-th execution of a
//     site by each lane of a warp forms the warp's k-th request of that site (lanes that skip it
//     are inactive in it). At every block end the block's requests are counted; at exit the
//     per-site and per-kernel totals go to the file named by EMU_MEMSTAT (appended).
// The widths are those of the host compilation at -O0: a float4 / uint4 / float2 access of the
// template (16-byte aligned types in the emulators) is one access of its size, as on the GPU;
// what NVCC may merge or split beyond the source's own types is not modelled.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <unordered_set>
#include <vector>

namespace memstat {

struct lane_access {
  int lane;              // 0..31
  unsigned long long a;  // byte address
  int bytes;             // width: 1, 2, 4, 8, 16
};

// Wavefronts of one phase of shared-memory accesses; *ideal gets its lower bound.
static inline int smem_phase(const lane_access *v, int n, int *ideal) {
  std::set<unsigned long long> words;
  for (int i = 0; i < n; ++i)
    for (unsigned long long w = v[i].a >> 2; w <= (v[i].a + (unsigned long long)v[i].bytes - 1) >> 2; ++w)
      words.insert(w);
  int per_bank[32] = {0}, most = 0;
  for (unsigned long long w : words) most = std::max(most, ++per_bank[w & 31]);
  *ideal = words.empty() ? 0 : (int)((words.size() + 31) / 32);
  return most;
}

// Lanes per phase: 32 for widths up to 4 bytes, 16 for 8, 8 for 16 (and for ldmatrix rows).
static inline int smem_lanes_per_phase(int bytes) { return bytes <= 4 ? 32 : bytes == 8 ? 16 : 8; }

// Wavefronts of one warp-level shared request (active lanes only, any order); *ideal likewise.
// Every access of the request must have the same width (one instruction).
static inline int smem_wavefronts(const std::vector<lane_access> &req, int *ideal) {
  *ideal = 0;
  if (req.empty()) return 0;
  const int lpp = smem_lanes_per_phase(req[0].bytes);
  int total = 0;
  for (int p = 0; p < 32 / lpp; ++p) {
    std::vector<lane_access> ph;
    for (const lane_access &x : req)
      if (x.lane / lpp == p) ph.push_back(x);
    int id = 0;
    total += smem_phase(ph.data(), (int)ph.size(), &id);
    *ideal += id;
  }
  return total;
}

// ldmatrix .m8n8 .x1/.x2/.x4: rows = the row addresses of lanes 0..8*num-1 (16 bytes each),
// one phase per matrix.
static inline int ldmatrix_wavefronts(const std::vector<lane_access> &rows, int *ideal) {
  *ideal = 0;
  int total = 0;
  for (int j = 0; j < 4; ++j) {
    std::vector<lane_access> ph;
    for (const lane_access &x : rows)
      if (x.lane / 8 == j) ph.push_back(lane_access{x.lane, x.a, 16});
    int id = 0;
    total += smem_phase(ph.data(), (int)ph.size(), &id);
    *ideal += id;
  }
  return total;
}

// 32-byte sectors a global request touches; *ideal = its distinct bytes / 32, rounded up.
static inline int gmem_sectors(const std::vector<lane_access> &req, int *ideal) {
  std::set<unsigned long long> sec, byte;
  for (const lane_access &x : req)
    for (int b = 0; b < x.bytes; ++b) {
      sec.insert((x.a + (unsigned long long)b) >> 5);
      byte.insert(x.a + (unsigned long long)b);
    }
  *ideal = (int)((byte.size() + 31) / 32);
  return (int)sec.size();
}

// K_WGMMA: one 8 x 16-byte core matrix a wgmma reads through its shared-memory descriptor, one
// request (rows as lanes 0..7, served as one ldmatrix phase; docs/gpu-model.md)
enum kind { K_LD = 0, K_ST, K_LDMATRIX, K_CP_ASYNC, K_TMA, K_ATOM, K_WGMMA, K_NKIND };
static const char *const kind_name[K_NKIND] = {"ld", "st", "ldmatrix", "cp.async", "tma", "atom",
                                               "wgmma"};

// wgmma's reads of one 8 x 16-byte core matrix (row addresses, 16 bytes each): one phase, as an
// ldmatrix matrix; *ideal = 1 (128 bytes).
static inline int core_matrix_wavefronts(const std::vector<lane_access> &rows, int *ideal) {
  return ldmatrix_wavefronts(rows, ideal);
}
enum space { S_SHARED = 0, S_GLOBAL };

// Per-site totals over all requests.
struct site_total {
  long long requests = 0, units = 0, ideal = 0, worst = 0, bytes = 0;
  int space = 0, kind = 0;
};

}  // namespace memstat

#ifdef EMU_MEMSTAT
#include <unistd.h>
#include <sys/wait.h>

namespace memstat {

// ---- the recorder --------------------------------------------------------------------------
struct pending {
  std::vector<std::vector<lane_access>> reqs;
  int count[32] = {0};
  int space = 0, kind = 0;
};
struct key {
  uintptr_t pc;
  int warp, space, kind;
  bool operator<(const key &o) const {
    return pc != o.pc ? pc < o.pc : warp != o.warp ? warp < o.warp : space != o.space ? space < o.space : kind < o.kind;
  }
};
struct state {
  bool active = false;
  bool busy = false;                                // inside the recorder: plain hooks ignored
  std::map<key, pending> block;                     // this block's requests
  std::map<std::string, site_total> sites;          // "kernel|file:line|space|kind"
  std::map<std::string, std::unordered_set<unsigned long long>> rd, wr; // kernel -> sectors
  std::map<std::string, long long> traffic;         // kernel -> sector bytes of all requests
  std::map<std::string, long long> blocks;          // kernel -> blocks run
  std::map<uintptr_t, std::string> where;           // pc -> "file:line" or "" (not a template)
  std::string kernel = "?";
  int phase = 0;                                    // the launch's phase argument (set_phase)
  unsigned long long sh_lo = 0, sh_hi = 0;          // the emulated shared window
  int a2l_in = -1, a2l_out = -1;
};
// A namespace-scope object (zero before its constructor runs: `active` reads false), so the
// hooks never start a function-local static's initialization from inside itself.
static state g_state;
__attribute__((no_sanitize_thread)) static inline state &st() { return g_state; }
// Marks the recorder busy for a scope: its own (instrumented) accesses are not the kernel's.
struct busy_scope {
  bool was;
  __attribute__((no_sanitize_thread)) busy_scope() : was(st().busy) { st().busy = true; }
  __attribute__((no_sanitize_thread)) ~busy_scope() { st().busy = was; }
};

// file:line of a code address (addr2line on this executable, one child process for the run);
// "" for code outside templates/.
static std::string site_of(uintptr_t pc) {
  busy_scope guard;
  state &s = st();
  auto it = s.where.find(pc);
  if (it != s.where.end()) return it->second;
  if (s.a2l_in < 0) {
    char exe[4096];
    const ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0) { std::fprintf(stderr, "memstat: readlink\n"); std::exit(3); }
    exe[len] = 0;
    int to[2], from[2];
    if (pipe(to) || pipe(from)) { std::fprintf(stderr, "memstat: pipe\n"); std::exit(3); }
    pid_t p = fork();
    if (p == 0) {
      dup2(to[0], 0); dup2(from[1], 1);
      close(to[1]); close(from[0]);
      execlp("addr2line", "addr2line", "-e", exe, (char *)nullptr);
      _exit(127);
    }
    if (p < 0) { std::fprintf(stderr, "memstat: fork\n"); std::exit(3); }
    close(to[0]); close(from[1]);
    s.a2l_in = to[1];
    s.a2l_out = from[0];
  }
  char buf[64];
  int n = std::snprintf(buf, sizeof buf, "%#lx\n", (unsigned long)(pc - 1));
  if (write(s.a2l_in, buf, (size_t)n) != n) { std::fprintf(stderr, "memstat: addr2line\n"); std::exit(3); }
  std::string line;
  char c;
  while (read(s.a2l_out, &c, 1) == 1 && c != '\n') line += c;
  std::string out;
  size_t t = line.rfind("templates/");
  if (t != std::string::npos) {
    out = line.substr(t);
    size_t d = out.find(" (discriminator");
    if (d != std::string::npos) out = out.substr(0, d);
  }
  s.where[pc] = out;
  return out;
}

static void set_shared_window(const void *lo, size_t bytes) {
  st().sh_lo = (unsigned long long)(uintptr_t)lo;
  st().sh_hi = st().sh_lo + bytes;
}
static bool is_shared(unsigned long long a) { return a >= st().sh_lo && a < st().sh_hi; }

// One access by CUDA thread tid (of the current block) at code address pc.
static void note(uintptr_t pc, int space, int kind, unsigned long long a, int bytes, int tid) {
  busy_scope guard;
  state &s = st();
  if (!s.active) return;
  pending &p = s.block[key{pc, tid >> 5, space, kind}];
  p.space = space, p.kind = kind;
  const int lane = tid & 31, k = p.count[lane]++;
  if ((int)p.reqs.size() <= k) p.reqs.resize((size_t)k + 1);
  p.reqs[(size_t)k].push_back(lane_access{lane, a, bytes});
}

// One whole request at once (an access the lanes do not each issue: a wgmma core matrix, a TMA
// box row), by warp `warp` at code address pc.
static void note_request(uintptr_t pc, int space, int kind, int warp,
                         const std::vector<lane_access> &req) {
  busy_scope guard;
  state &s = st();
  if (!s.active) return;
  pending &p = s.block[key{pc, warp, space, kind}];
  p.space = space, p.kind = kind;
  p.reqs.push_back(req);
}

// The shared reads of one wgmma m64nNk32 (N = 2n) as its descriptors place them: every 8 x 16-byte
// core matrix of A (64 rows) and B (N rows), each K step's two 16-byte halves, one request each
// (docs/gpu-model.md: the 128-byte swizzle puts a core matrix's 8 rows in 8 different 16-byte
// bank groups). addr(desc, row, byte column) is the emulator's descriptor walk.
template <class Addr>
static void note_wgmma_reads(uintptr_t pc, int warp, unsigned long long da, unsigned long long db,
                             int n, Addr addr) {
  busy_scope guard;  // the walk's own work is not the kernel's traffic
  for (int m = 0; m < 2; ++m) {
    const unsigned long long desc = m ? db : da;
    const int rows = m ? 2 * n : 64;
    for (int r0 = 0; r0 < rows; r0 += 8)
      for (int c = 0; c < 32; c += 16) {
        std::vector<lane_access> req;
        for (int j = 0; j < 8; ++j) req.push_back(lane_access{j, addr(desc, r0 + j, c), 16});
        note_request(pc, S_SHARED, K_WGMMA, warp, req);
      }
  }
}

// Counts the block's requests into the per-site totals; a_block: one block of the grid ended
// (launch_end's final flush is not one).
static void block_end(bool a_block = true) {
  busy_scope guard;
  state &s = st();
  for (auto &kv : s.block) {
    const std::string w = site_of(kv.first.pc);
    if (w.empty()) continue;
    const pending &p = kv.second;
    site_total &t = s.sites[s.kernel + "|" + w + "|" + (p.space ? "global" : "shared") + "|" +
                            kind_name[p.kind]];
    t.space = p.space, t.kind = p.kind;
    for (const auto &r : p.reqs) {
      if (r.empty()) continue;
      int ideal = 0, u;
      if (p.space == S_GLOBAL) {
        u = gmem_sectors(r, &ideal);
        s.traffic[s.kernel] += 32LL * u;
        auto &set = p.kind == K_ST ? s.wr[s.kernel] : s.rd[s.kernel];
        for (const lane_access &x : r)
          for (int b = 0; b < x.bytes; b += 1) set.insert((x.a + (unsigned long long)b) >> 5);
      } else {
        u = p.kind == K_LDMATRIX ? ldmatrix_wavefronts(r, &ideal)
            : p.kind == K_WGMMA  ? core_matrix_wavefronts(r, &ideal)
                                 : smem_wavefronts(r, &ideal);
      }
      for (const lane_access &x : r) t.bytes += x.bytes;
      t.requests++, t.units += u, t.ideal += ideal;
      t.worst = std::max(t.worst, (long long)u - ideal);
    }
  }
  s.block.clear();
  if (a_block) s.blocks[s.kernel]++;
}

// The phase argument of the next launches (kernels launched once per phase: hadamard_quant.cu,
// hla_project.cu, lqs.cu, sawb.cu); counted per "KERNEL#PHASE".
static void set_phase(int phase) { st().phase = phase; }
static void launch_begin(const char *kernel) {
  busy_scope guard;
  st().kernel = std::string(kernel) + "#" + std::to_string(st().phase);
  st().active = true;
}
static void launch_end() {
  block_end(false);
  st().active = false;
}

// At exit: one line per site and per kernel into $EMU_MEMSTAT.
//   site KERNEL FILE:LINE SPACE KIND requests units ideal worst_excess bytes
//     (units: wavefronts for shared, sectors for global)
//   kernel KERNEL traffic_bytes unique_read_bytes unique_written_bytes blocks
static void report() {
  busy_scope guard;
  const char *path = std::getenv("EMU_MEMSTAT");
  if (!path || !*path) return;
  std::FILE *f = std::fopen(path, "a");
  if (!f) { std::fprintf(stderr, "memstat: cannot open %s\n", path); return; }
  state &s = st();
  for (auto &kv : s.sites) {
    std::string k = kv.first;
    for (char &c : k) if (c == '|') c = ' ';
    const site_total &t = kv.second;
    std::fprintf(f, "site %s %lld %lld %lld %lld %lld\n", k.c_str(), t.requests, t.units, t.ideal,
                 t.worst, t.bytes);
  }
  for (auto &kv : s.traffic)
    std::fprintf(f, "kernel %s %lld %lld %lld %lld\n", kv.first.c_str(), kv.second,
                 32LL * (long long)s.rd[kv.first].size(), 32LL * (long long)s.wr[kv.first].size(),
                 s.blocks[kv.first]);
  std::fclose(f);
}
struct reporter { ~reporter() { report(); } };
static reporter g_reporter;

}  // namespace memstat

// Buffers of 256 bytes or more on 256-byte boundaries, as cudaMalloc and the runtime's workspace
// (runtime/cuda_backend.c) place them, so that a request's sectors are those of the GPU run and
// not an artifact of malloc's 16-byte alignment. Smaller blocks (the recorder's own nodes) come
// from malloc; both are released with free.
__attribute__((no_sanitize_thread)) static inline void *memstat_alloc(std::size_t n) {
  void *p = n >= 256 ? std::aligned_alloc(256, (n + 255) / 256 * 256) : std::malloc(n ? n : 1);
  if (!p) { std::fprintf(stderr, "memstat: out of memory\n"); std::exit(3); }
  return p;
}
void *operator new(std::size_t n) { return memstat_alloc(n); }
void *operator new[](std::size_t n) { return memstat_alloc(n); }
void operator delete(void *p) noexcept { std::free(p); }
void operator delete[](void *p) noexcept { std::free(p); }
void operator delete(void *p, std::size_t) noexcept { std::free(p); }
void operator delete[](void *p, std::size_t) noexcept { std::free(p); }

// ThreadSanitizer's instrumentation, without its runtime: every plain load / store of the code
// compiled with -fsanitize=thread lands here. Fiber stacks (locals) are not memory traffic.
__attribute__((no_sanitize_thread)) static inline bool memstat_on_stack(unsigned long long a) {
  if (emu::g_cur < 0) return true;
  const unsigned long long lo = (unsigned long long)(uintptr_t)emu::g_fib[(size_t)emu::g_cur].mem;
  return a >= lo && a < lo + emu::k_stack;
}
// threadIdx, blockIdx, gridDim, blockDim: registers on the GPU, globals in the emulator
__attribute__((no_sanitize_thread)) static inline bool memstat_builtin(unsigned long long a) {
  const emu_dim3 *v[4] = {&threadIdx, &blockIdx, &gridDim, &blockDim};
  for (const emu_dim3 *d : v)
    if (a >= (unsigned long long)(uintptr_t)d && a < (unsigned long long)(uintptr_t)(d + 1)) return true;
  return false;
}
__attribute__((no_sanitize_thread)) static inline void memstat_plain(uintptr_t pc, const void *p,
                                                                    int bytes, bool w) {
  const unsigned long long a = (unsigned long long)(uintptr_t)p;
  memstat::state &s = memstat::st();
  if (!s.active || s.busy || memstat_builtin(a)) return;
  memstat::busy_scope guard; // the library code below is instrumented too
  if (memstat_on_stack(a) || memstat::site_of(pc).empty()) return; // locals; not the template
  const bool sh = memstat::is_shared(a); // shared: the offset in the window, as on the GPU
  memstat::note(pc, sh ? memstat::S_SHARED : memstat::S_GLOBAL, w ? memstat::K_ST : memstat::K_LD,
                sh ? a - s.sh_lo : a, bytes, (int)threadIdx.x);
}
#define MEMSTAT_HOOK(n)                                                                             \
  extern "C" __attribute__((no_sanitize_thread)) void __tsan_read##n(void *p) { memstat_plain((uintptr_t)__builtin_return_address(0), p, n, false); } \
  extern "C" __attribute__((no_sanitize_thread)) void __tsan_write##n(void *p) { memstat_plain((uintptr_t)__builtin_return_address(0), p, n, true); } \
  extern "C" __attribute__((no_sanitize_thread)) void __tsan_unaligned_read##n(void *p) { memstat_plain((uintptr_t)__builtin_return_address(0), p, n, false); } \
  extern "C" __attribute__((no_sanitize_thread)) void __tsan_unaligned_write##n(void *p) { memstat_plain((uintptr_t)__builtin_return_address(0), p, n, true); }
MEMSTAT_HOOK(1)
MEMSTAT_HOOK(2)
MEMSTAT_HOOK(4)
MEMSTAT_HOOK(8)
MEMSTAT_HOOK(16)
#undef MEMSTAT_HOOK
// The emulators' vector types (float2, float4, uint4): GCC's instrumentation does not see a
// struct stored from a call's result (`*p = make_float2(a, b)`) and splits others into words,
// so their copies and assignments report one access of the whole vector themselves.
#define EMU_VEC_COPY(T)                                                                            \
  T() = default;                                                                                   \
  __attribute__((no_sanitize_thread, noinline)) T(const T &o) {                                   \
    memstat_plain((uintptr_t)__builtin_return_address(0), &o, (int)sizeof(T), false);             \
    std::memcpy((void *)this, (const void *)&o, sizeof(T));                                        \
  }                                                                                                \
  __attribute__((no_sanitize_thread, noinline)) T &operator=(const T &o) {                        \
    memstat_plain((uintptr_t)__builtin_return_address(0), this, (int)sizeof(T), true);            \
    std::memcpy((void *)this, (const void *)&o, sizeof(T));                                        \
    return *this;                                                                                  \
  }
extern "C" void __tsan_init(void) {}
extern "C" void __tsan_func_entry(void *) {}
extern "C" void __tsan_func_exit(void) {}
// aggregate copies (a float2 / float4 struct assignment) may come as ranges: one access each
extern "C" __attribute__((no_sanitize_thread)) void __tsan_read_range(void *p, unsigned long n) {
  memstat_plain((uintptr_t)__builtin_return_address(0), p, (int)n, false);
}
extern "C" __attribute__((no_sanitize_thread)) void __tsan_write_range(void *p, unsigned long n) {
  memstat_plain((uintptr_t)__builtin_return_address(0), p, (int)n, true);
}
extern "C" void __tsan_vptr_update(void **, void *) {}
extern "C" void __tsan_vptr_read(void **) {}
#endif
