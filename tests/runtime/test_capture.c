/* test_capture.c — layer capture files (hot_capture_write in hot.h, capture_read in
 * capture.h): round trips in f32, bf16 and f16 with 2-D (B = 1) and 3-D shapes against an
 * independent conversion and the documented byte layout; every single-byte corruption and every
 * truncation of a small file refused with a message naming the file; forged headers with huge or
 * wrapping sizes refused before any allocation (malloc is wrapped at link time and counted);
 * bad arguments; unwritable paths, a write failing half-way, and no temporary file left behind. */
#include "rt_util.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "capture.h"
#include "hash.h"

/* ---- malloc counting (linked with -Wl,--wrap=malloc) ------------------------------------------ */

void *__real_malloc(size_t n);
void *__wrap_malloc(size_t n);
static size_t g_mallocs, g_malloc_max;
static size_t g_fail_at; /* > 0: the g_fail_at-th allocation from now returns NULL */
static size_t g_read_mallocs, g_read_malloc_max; /* during the last expect_refused's read */
void *__wrap_malloc(size_t n) {
  ++g_mallocs;
  if (n > g_malloc_max) g_malloc_max = n;
  if (g_fail_at && g_mallocs == g_fail_at) return NULL;
  return __real_malloc(n);
}

/* ---- helpers ------------------------------------------------------------------------------- */

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(void) {
  rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(rng_state >> 33);
}

/* The conversions of the format, written independently of the library's. */
static float bf16_f32(uint16_t b) {
  uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static float f16_f32(uint16_t h) {
  int e = (h >> 10) & 31, m = h & 1023;
  double v = e ? ldexp(1024 + m, e - 25) : ldexp(m, -24);
  return (float)((h & 0x8000) ? -v : v);
}

/* n random finite elements of dtype dt into p; their fp32 values into ref. A few fixed patterns
 * first: zero, minus zero, the largest finite value, the smallest subnormal. */
static void fill(void *p, float *ref, hot_dtype dt, size_t n) {
  static const uint16_t f16_fixed[4] = {0x0000, 0x8000, 0x7bff, 0x0001};
  static const uint16_t bf_fixed[4] = {0x0000, 0x8000, 0x7f7f, 0x0001};
  for (size_t i = 0; i < n; ++i) {
    if (dt == HOT_DT_F32) {
      float v = (float)((int32_t)rnd() - (int32_t)0x40000000) / 1e6f;
      if (i == 1) v = -0.0f;
      if (i == 2) v = 3.4028235e38f;
      if (i == 3) v = 1.4e-45f;
      ((float *)p)[i] = v;
      ref[i] = v;
    } else {
      uint16_t b;
      if (i < 4) b = dt == HOT_DT_F16 ? f16_fixed[i] : bf_fixed[i];
      else
        do b = (uint16_t)rnd();
        while (dt == HOT_DT_F16 ? ((b >> 10) & 31) == 31 : ((b >> 7) & 255) == 255);
      ((uint16_t *)p)[i] = b;
      ref[i] = dt == HOT_DT_F16 ? f16_f32(b) : bf16_f32(b);
    }
  }
}

static unsigned char *slurp(const char *path, size_t *n) {
  FILE *fp = fopen(path, "rb");
  ck_assert_msg(fp != NULL, "cannot open %s", path);
  fseek(fp, 0, SEEK_END);
  long sz = ftell(fp);
  fseek(fp, 0, SEEK_SET);
  unsigned char *d = malloc((size_t)sz + 1);
  ck_assert_uint_eq(fread(d, 1, (size_t)sz, fp), (size_t)sz);
  fclose(fp);
  *n = (size_t)sz;
  return d;
}

static void spit(const char *path, const unsigned char *d, size_t n) {
  FILE *fp = fopen(path, "wb");
  ck_assert_ptr_nonnull(fp);
  ck_assert_uint_eq(fwrite(d, 1, n, fp), n);
  ck_assert_int_eq(fclose(fp), 0);
}

static uint64_t le(const unsigned char *p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= (uint64_t)p[i] << (8 * i);
  return v;
}
static void put_le(unsigned char *p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) p[i] = (unsigned char)(v >> (8 * i));
}

/* Recomputes the trailing SHA-256 of an image (a forged header stays "valid" but for itself). */
static void reseal(unsigned char *d, size_t n) { hash_sha256_digest(d, n - 32, d + n - 32); }

/* Entries of dir whose name contains ".tmp-". */
static int tmp_files(const char *dir) {
  DIR *d = opendir(dir);
  ck_assert_ptr_nonnull(d);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) n += strstr(e->d_name, ".tmp-") != NULL;
  closedir(d);
  return n;
}

/* Reads path expecting failure `want`; the message must start "capture <path>: " and be one line. */
static void expect_refused(const char *path, int want, const char *needle) {
  hot_capture c;
  char err[512];
  g_mallocs = g_malloc_max = 0;
  int st = capture_read(path, &c, err, sizeof err);
  g_read_mallocs = g_mallocs;
  g_read_malloc_max = g_malloc_max;
  ck_assert_msg(st == want, "%s: status %d, want %d (%s)", path, st, want, err);
  char head[400];
  snprintf(head, sizeof head, "capture %s: ", path);
  ck_assert_msg(strncmp(err, head, strlen(head)) == 0, "message does not name the file: %s", err);
  ck_assert_msg(strchr(err, '\n') == NULL, "message is not one line: %s", err);
  if (needle) ck_assert_msg(strstr(err, needle) != NULL, "'%s' not in: %s", needle, err);
  ck_assert_ptr_null(c.x);
  ck_assert_ptr_null(c.w);
  ck_assert_ptr_null(c.g_y);
  ck_assert_int_eq(c.T, 0);
}

/* A small f16 capture (B=1 L=2 O=2 I=3: 160 + 32 + 32 bytes) at path; returns its size. */
static size_t small_capture(const char *path) {
  uint16_t x[6], w[6], gy[4];
  float r[6];
  fill(x, r, HOT_DT_F16, 6);
  fill(w, r, HOT_DT_F16, 6);
  fill(gy, r, HOT_DT_F16, 4);
  char err[512];
  ck_assert_msg(hot_capture_write(path, "fc1", 1, 2, 2, 3, HOT_DT_F16, x, w, gy, err,
                                  sizeof err) == HOT_OK, "%s", err);
  struct stat sb;
  ck_assert_int_eq(stat(path, &sb), 0);
  ck_assert_int_eq(sb.st_size, HOT_CAPTURE_HEADER_BYTES + 32 + 32);
  return (size_t)sb.st_size;
}

/* ---- tests --------------------------------------------------------------------------------- */

START_TEST(round_trip) {
  static const hot_dtype dts[3] = {HOT_DT_F32, HOT_DT_BF16, HOT_DT_F16};
  /* B, L, O, I: 2-D (one sample), 3-D, and sizes that cross the 1 MiB chunk of the streams */
  static const int64_t shapes[3][4] = {{1, 5, 3, 4}, {3, 2, 5, 7}, {2, 300, 700, 513}};
  char dir[256], path[400];
  ck_assert_ptr_nonnull(tmp_dir(dir));
  snprintf(path, sizeof path, "%s/layer.hotcap", dir);
  for (int d = 0; d < 3; ++d)
    for (int s = 0; s < 3; ++s) {
      const int64_t B = shapes[s][0], L = shapes[s][1], O = shapes[s][2], I = shapes[s][3];
      const int64_t T = B * L;
      const size_t n[3] = {(size_t)(T * I), (size_t)(O * I), (size_t)(T * O)};
      const size_t esz = dts[d] == HOT_DT_F32 ? 4 : 2;
      void *src[3];
      float *ref[3];
      for (int k = 0; k < 3; ++k) {
        src[k] = malloc(n[k] * esz);
        ref[k] = malloc(n[k] * sizeof(float));
        fill(src[k], ref[k], dts[d], n[k]);
      }
      char err[512], name[32];
      snprintf(name, sizeof name, "blocks.%d.mlp fc%d", s, d);
      ck_assert_msg(hot_capture_write(path, name, B, L, O, I, dts[d], src[0], src[1], src[2], err,
                                      sizeof err) == HOT_OK, "%s", err);
      ck_assert_str_eq(err, "");
      /* the documented layout, byte by byte where it is fixed */
      size_t fsz;
      unsigned char *img = slurp(path, &fsz);
      const size_t payload = (n[0] + n[1] + n[2]) * esz;
      ck_assert_uint_eq(fsz, 160 + payload + 32);
      ck_assert_int_eq(memcmp(img, "HOTCAP\0\0", 8), 0);
      ck_assert_uint_eq(le(img + 8, 4), 1);
      ck_assert_uint_eq(le(img + 12, 4), 160);
      ck_assert_uint_eq(le(img + 16, 4), (uint64_t)dts[d]);
      ck_assert_uint_eq(le(img + 20, 4), esz);
      ck_assert_uint_eq(le(img + 24, 8), (uint64_t)B);
      ck_assert_uint_eq(le(img + 32, 8), (uint64_t)L);
      ck_assert_uint_eq(le(img + 40, 8), (uint64_t)O);
      ck_assert_uint_eq(le(img + 48, 8), (uint64_t)I);
      ck_assert_uint_eq(le(img + 56, 8), payload);
      ck_assert_uint_eq(le(img + 64, 4), strlen(name));
      ck_assert_int_eq(memcmp(img + 68, name, strlen(name)), 0);
      for (size_t i = 68 + strlen(name); i < 160; ++i) ck_assert_uint_eq(img[i], 0);
      ck_assert_int_eq(memcmp(img + 160, src[0], esz * 2), 0); /* little-endian host */
      unsigned char sum[32];
      hash_sha256_digest(img, fsz - 32, sum);
      ck_assert_int_eq(memcmp(sum, img + fsz - 32, 32), 0);
      free(img);

      hot_capture c;
      ck_assert_msg(capture_read(path, &c, err, sizeof err) == HOT_OK, "%s", err);
      ck_assert_str_eq(err, "");
      ck_assert_str_eq(c.name, name);
      ck_assert_int_eq(c.B, B);
      ck_assert_int_eq(c.L, L);
      ck_assert_int_eq(c.O, O);
      ck_assert_int_eq(c.I, I);
      ck_assert_int_eq(c.T, T);
      ck_assert_int_eq(c.dtype, dts[d]);
      float *got[3] = {c.x, c.w, c.g_y};
      for (int k = 0; k < 3; ++k) {
        /* bit for bit (-0 stays -0) */
        ck_assert_msg(memcmp(got[k], ref[k], n[k] * sizeof(float)) == 0,
                      "dtype %d shape %d tensor %d differs", (int)dts[d], s, k);
        free(src[k]);
        free(ref[k]);
      }
      capture_free(&c);
      ck_assert_ptr_null(c.x);
      capture_free(&c); /* twice is safe */
      capture_free(NULL);
    }
  ck_assert_int_eq(tmp_files(dir), 0);
  rm_tree(dir);
}
END_TEST

START_TEST(every_corruption_detected) {
  char dir[256], path[400];
  ck_assert_ptr_nonnull(tmp_dir(dir));
  snprintf(path, sizeof path, "%s/small.hotcap", dir);
  size_t n = small_capture(path);
  unsigned char *good = slurp(path, &n);
  static const unsigned char masks[3] = {0x01, 0x80, 0xff};
  for (size_t i = 0; i < n; ++i)
    for (int m = 0; m < 3; ++m) {
      unsigned char *bad = malloc(n);
      memcpy(bad, good, n);
      bad[i] ^= masks[m];
      spit(path, bad, n);
      free(bad);
      /* a header byte may be caught by its own check first; any payload or checksum byte by
         the checksum */
      expect_refused(path, HOT_ERR_INVALID, i >= 160 ? "checksum mismatch" : NULL);
    }
  spit(path, good, n); /* and the original still reads */
  hot_capture c;
  char err[512];
  ck_assert_msg(capture_read(path, &c, err, sizeof err) == HOT_OK, "%s", err);
  capture_free(&c);
  free(good);
  rm_tree(dir);
}
END_TEST

START_TEST(every_truncation_refused) {
  char dir[256], path[400];
  ck_assert_ptr_nonnull(tmp_dir(dir));
  snprintf(path, sizeof path, "%s/small.hotcap", dir);
  size_t n = small_capture(path);
  unsigned char *good = slurp(path, &n);
  for (size_t len = 0; len < n; ++len) {
    spit(path, good, len);
    expect_refused(path, HOT_ERR_INVALID, "truncated");
  }
  unsigned char *longer = malloc(n + 1);
  memcpy(longer, good, n);
  longer[n] = 0;
  spit(path, longer, n + 1);
  expect_refused(path, HOT_ERR_INVALID, "truncated or extended");
  free(longer);
  free(good);
  rm_tree(dir);
}
END_TEST

/* Forged headers whose checksum is right for themselves: sizes too large for the file, sizes
 * whose byte count wraps 2^64 to exactly the file's payload, T overflowing: refused before any
 * allocation. */
START_TEST(huge_sizes_refused_without_allocating) {
  char dir[256], path[400];
  ck_assert_ptr_nonnull(tmp_dir(dir));
  snprintf(path, sizeof path, "%s/forged.hotcap", dir);
  size_t n = small_capture(path);
  unsigned char *good = slurp(path, &n);
  struct {
    int64_t B, L, O, I;
    int dtype;             /* 0: f32 (esz 4) */
    uint64_t payload;      /* 0: keep the file's */
    size_t file_payload;   /* bytes of payload in the forged file */
    const char *needle;
  } cases[] = {
      /* the real payload size field, impossible sizes */
      {2147483647, 2147483647, 2, 3, 2, 0, 32, "T = B * L"},
      {1, 2147483647, 2147483647, 2147483647, 2, 0, 32, "payload size"},
      {1, 2, 2, 2147483648LL, 2, 0, 32, "I = 2147483648"},
      {-1, 2, 2, 3, 2, 0, 32, "B = -1"},
      {1, 0, 2, 3, 2, 0, 32, "L = 0"},
      /* (T*I + O*I + T*O) * 4 = (2^62 + 55) * 4 wraps to 220: the file holds 220 bytes */
      {1, 1073754169, 715902671, 2147329284, 0, 220, 220, "payload size"},
      /* the payload field claims what the sizes need; the file is short */
      {1, 1 << 30, 1 << 30, 1 << 30, 2, 0, 32, "payload size"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; ++k) {
    size_t fsz = 160 + cases[k].file_payload + 32;
    unsigned char *img = calloc(1, fsz);
    memcpy(img, good, 160);
    put_le(img + 16, (uint64_t)cases[k].dtype, 4);
    put_le(img + 20, cases[k].dtype == 0 ? 4 : 2, 4);
    put_le(img + 24, (uint64_t)cases[k].B, 8);
    put_le(img + 32, (uint64_t)cases[k].L, 8);
    put_le(img + 40, (uint64_t)cases[k].O, 8);
    put_le(img + 48, (uint64_t)cases[k].I, 8);
    put_le(img + 56, cases[k].payload ? cases[k].payload : cases[k].file_payload, 8);
    reseal(img, fsz);
    spit(path, img, fsz);
    free(img);
    expect_refused(path, HOT_ERR_INVALID, cases[k].needle);
    ck_assert_msg(g_read_mallocs == 0,
                  "case %zu: %zu allocations (largest %zu bytes) before refusing", k,
                  g_read_mallocs, g_read_malloc_max);
  }
  /* consistent header, payload field and sizes (3 * 2^30 * 2^30 * 2 bytes) but a short file */
  unsigned char *img = calloc(1, 192 + 32);
  memcpy(img, good, 160);
  put_le(img + 32, 1 << 30, 8);
  put_le(img + 40, 1 << 30, 8);
  put_le(img + 48, 1 << 30, 8);
  put_le(img + 56, 3ull * (1ull << 60) * 2, 8);
  reseal(img, 192 + 32);
  spit(path, img, 192 + 32);
  free(img);
  expect_refused(path, HOT_ERR_INVALID, "truncated or extended");
  ck_assert_uint_eq(g_read_mallocs, 0);
  /* the counter sees the reader's allocations: a valid file makes the buffer and three tensors */
  spit(path, good, n);
  hot_capture c;
  char err[512];
  g_mallocs = 0;
  ck_assert_msg(capture_read(path, &c, err, sizeof err) == HOT_OK, "%s", err);
  ck_assert_uint_ge(g_mallocs, 4);
  capture_free(&c);
  free(good);
  rm_tree(dir);
}
END_TEST

/* A valid checksum over a header whose other fields are broken, and NaN payloads. */
START_TEST(bad_fields_under_valid_checksum) {
  char dir[256], path[400];
  ck_assert_ptr_nonnull(tmp_dir(dir));
  snprintf(path, sizeof path, "%s/f.hotcap", dir);
  size_t n = small_capture(path);
  unsigned char *good = slurp(path, &n);
  struct {
    size_t at;
    int bytes;
    uint64_t v;
    const char *needle;
  } cases[] = {
      {0, 1, 'h', "wrong magic"},     {8, 4, 2, "format version 2"},
      {12, 4, 128, "header size 128"}, {16, 4, 3, "dtype 3"},
      {20, 4, 4, "element size 4"},   {64, 4, 0, "name length 0"},
      {64, 4, 64, "name length 64"},  {68, 1, '\n', "not printable"},
      {72, 1, 'x', "name padding"},   {150, 1, 1, "reserved"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; ++k) {
    unsigned char *img = malloc(n);
    memcpy(img, good, n);
    put_le(img + cases[k].at, cases[k].v, cases[k].bytes);
    reseal(img, n);
    spit(path, img, n);
    free(img);
    expect_refused(path, HOT_ERR_INVALID, cases[k].needle);
  }
  /* a non-finite element (f16 Inf) in g_y, sealed: named with its row and column */
  unsigned char *img = malloc(n);
  memcpy(img, good, n);
  put_le(img + 160 + 24 + 2 * 3, 0x7c00, 2); /* g_y[1][1] */
  reseal(img, n);
  spit(path, img, n);
  free(img);
  expect_refused(path, HOT_ERR_INVALID, "g_y[1][1] is Inf");
  free(good);

  /* files that are not captures, or not files */
  expect_refused(dir, HOT_ERR_IO, "not a regular file");
  char missing[420];
  snprintf(missing, sizeof missing, "%s/missing.hotcap", dir);
  expect_refused(missing, HOT_ERR_IO, "cannot open");
  char fifo[420];
  snprintf(fifo, sizeof fifo, "%s/fifo", dir);
  ck_assert_int_eq(mkfifo(fifo, 0600), 0);
  expect_refused(fifo, HOT_ERR_IO, "not a regular file"); /* and does not block */
  static const unsigned char foreign[] = "HOTPACK\0 a kernel pack, not a capture: long enough";
  spit(path, foreign, sizeof foreign - 1);
  expect_refused(path, HOT_ERR_INVALID, "wrong magic");
  /* a control byte in the path is shown escaped, the message stays one line */
  char odd[420];
  snprintf(odd, sizeof odd, "%s/a\nb", dir);
  hot_capture c;
  char err[512];
  ck_assert_int_eq(capture_read(odd, &c, err, sizeof err), HOT_ERR_IO);
  ck_assert_ptr_null(strchr(err, '\n'));
  ck_assert_ptr_nonnull(strstr(err, "a\\012b"));
  ck_assert_int_eq(capture_read(NULL, &c, err, sizeof err), HOT_ERR_INVALID);
  ck_assert_ptr_nonnull(strstr(err, "no file given"));
  ck_assert_int_eq(capture_read(path, NULL, err, sizeof err), HOT_ERR_INVALID);
  ck_assert_ptr_nonnull(strstr(err, "out is NULL"));
  ck_assert_int_eq(capture_read(NULL, &c, NULL, 0), HOT_ERR_INVALID); /* no err buffer */
  rm_tree(dir);
}
END_TEST

START_TEST(bad_arguments) {
  char dir[256], path[400];
  ck_assert_ptr_nonnull(tmp_dir(dir));
  snprintf(path, sizeof path, "%s/a.hotcap", dir);
  float x[6] = {0}, w[6] = {0}, gy[4] = {0};
  char err[512];
  const int64_t M = 2147483647;
  struct {
    const char *path, *name;
    int64_t B, L, O, I;
    int dt;
    const void *x, *w, *gy;
    hot_status want;
    const char *needle;
  } cases[] = {
      {NULL, "fc", 1, 2, 2, 3, 0, x, w, gy, HOT_ERR_INVALID, "path is NULL"},
      {"", "fc", 1, 2, 2, 3, 0, x, w, gy, HOT_ERR_INVALID, "path is empty"},
      {path, NULL, 1, 2, 2, 3, 0, x, w, gy, HOT_ERR_INVALID, "layer_name is NULL"},
      {path, "", 1, 2, 2, 3, 0, x, w, gy, HOT_ERR_INVALID, "layer_name must be 1 .. 63 bytes"},
      {path, "0123456789012345678901234567890123456789012345678901234567890123", 1, 2, 2, 3, 0,
       x, w, gy, HOT_ERR_INVALID, "layer_name must be 1 .. 63 bytes"},
      {path, "fc\n1", 1, 2, 2, 3, 0, x, w, gy, HOT_ERR_INVALID, "layer_name byte 2 is 0x0a"},
      {path, "fc", 1, 2, 2, 3, 3, x, w, gy, HOT_ERR_INVALID, "dtype 3"},
      {path, "fc", 1, 2, 2, 3, -1, x, w, gy, HOT_ERR_INVALID, "dtype -1"},
      {path, "fc", 0, 2, 2, 3, 0, x, w, gy, HOT_ERR_SHAPE, "batch = 0"},
      {path, "fc", 1, -2, 2, 3, 0, x, w, gy, HOT_ERR_SHAPE, "tokens = -2"},
      {path, "fc", 1, 2, M + 1, 3, 0, x, w, gy, HOT_ERR_SHAPE, "out_features = 2147483648"},
      {path, "fc", 1, 2, 2, 0, 0, x, w, gy, HOT_ERR_SHAPE, "in_features = 0"},
      {path, "fc", 2, M, 2, 3, 0, x, w, gy, HOT_ERR_SHAPE, "T = batch * tokens"},
      {path, "fc", 1, 2, 2, 3, 0, NULL, w, gy, HOT_ERR_INVALID, "x is NULL"},
      {path, "fc", 1, 2, 2, 3, 0, x, NULL, gy, HOT_ERR_INVALID, "w is NULL"},
      {path, "fc", 1, 2, 2, 3, 0, x, w, NULL, HOT_ERR_INVALID, "g_y is NULL"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; ++k) {
    hot_status st = hot_capture_write(cases[k].path, cases[k].name, cases[k].B, cases[k].L,
                                      cases[k].O, cases[k].I, (hot_dtype)cases[k].dt, cases[k].x,
                                      cases[k].w, cases[k].gy, err, sizeof err);
    ck_assert_msg(st == cases[k].want, "case %zu: %s, want %s (%s)", k, hot_status_name(st),
                  hot_status_name(cases[k].want), err);
    ck_assert_msg(strstr(err, cases[k].needle) != NULL, "case %zu: '%s' not in: %s", k,
                  cases[k].needle, err);
    if (cases[k].path && *cases[k].path)
      ck_assert_msg(strstr(err, path) != NULL, "case %zu: path not named: %s", k, err);
    ck_assert_int_eq(access(path, F_OK), -1);
    /* without a message buffer the status is the same */
    ck_assert_int_eq(hot_capture_write(cases[k].path, cases[k].name, cases[k].B, cases[k].L,
                                       cases[k].O, cases[k].I, (hot_dtype)cases[k].dt,
                                       cases[k].x, cases[k].w, cases[k].gy, NULL, 0),
                     cases[k].want);
  }
  /* non-finite inputs, named with tensor, row and column, in each dtype */
  x[4] = NAN;
  ck_assert_int_eq(hot_capture_write(path, "fc", 1, 2, 2, 3, HOT_DT_F32, x, w, gy, err, sizeof err),
                   HOT_ERR_NONFINITE);
  ck_assert_ptr_nonnull(strstr(err, "x[1][1] is NaN"));
  uint16_t hx[6] = {0}, hw[6] = {0}, hgy[4] = {0};
  hgy[3] = 0xfc00; /* f16 -Inf */
  ck_assert_int_eq(hot_capture_write(path, "fc", 1, 2, 2, 3, HOT_DT_F16, hx, hw, hgy, err, sizeof err),
                   HOT_ERR_NONFINITE);
  ck_assert_ptr_nonnull(strstr(err, "g_y[1][1] is Inf"));
  hgy[3] = 0;
  hw[5] = 0x7fc0; /* bf16 NaN */
  ck_assert_int_eq(hot_capture_write(path, "fc", 1, 2, 2, 3, HOT_DT_BF16, hx, hw, hgy, err, sizeof err),
                   HOT_ERR_NONFINITE);
  ck_assert_ptr_nonnull(strstr(err, "w[1][2] is NaN"));
  ck_assert_int_eq(access(path, F_OK), -1);
  /* a short message buffer: the message is cut at a word, ends with "..." and is terminated */
  char small[16];
  ck_assert_int_eq(hot_capture_write(path, NULL, 1, 1, 1, 1, HOT_DT_F32, x, w, gy, small,
                                     sizeof small), HOT_ERR_INVALID);
  ck_assert_uint_le(strlen(small), sizeof small - 1);
  ck_assert_msg(strlen(small) > 3 && !strcmp(small + strlen(small) - 3, "..."), "%s", small);
  ck_assert_int_eq(tmp_files(dir), 0);
  rm_tree(dir);
}
END_TEST

START_TEST(unwritable_paths) {
  char dir[256], path[400], err[512];
  ck_assert_ptr_nonnull(tmp_dir(dir));
  float x[6] = {1, 2, 3, 4, 5, 6}, w[6] = {1, 2, 3, 4, 5, 6}, gy[4] = {1, 2, 3, 4};
  /* no such folder */
  snprintf(path, sizeof path, "%s/no/such/dir/a.hotcap", dir);
  ck_assert_int_eq(hot_capture_write(path, "fc", 1, 2, 2, 3, HOT_DT_F32, x, w, gy, err, sizeof err),
                   HOT_ERR_IO);
  ck_assert_msg(strstr(err, "cannot create") && strstr(err, path), "%s", err);
  /* the path is a non-empty folder: refused before anything is written (regular files only) */
  snprintf(path, sizeof path, "%s/taken", dir);
  ck_assert_int_eq(mkdir(path, 0700), 0);
  char inner[420];
  snprintf(inner, sizeof inner, "%s/keep", path);
  spit(inner, (const unsigned char *)"x", 1);
  ck_assert_int_eq(hot_capture_write(path, "fc", 1, 2, 2, 3, HOT_DT_F32, x, w, gy, err, sizeof err),
                   HOT_ERR_IO);
  ck_assert_msg(strstr(err, "not a regular file (a directory)") && strstr(err, path), "%s", err);
  ck_assert_int_eq(tmp_files(dir), 0);
  /* a write failing half-way (file size limit): the old capture at path stays as it was */
  snprintf(path, sizeof path, "%s/old.hotcap", dir);
  ck_assert_int_eq(hot_capture_write(path, "old", 1, 2, 2, 3, HOT_DT_F32, x, w, gy, err, sizeof err),
                   HOT_OK);
  size_t n0;
  unsigned char *before = slurp(path, &n0);
  enum { BT = 64, BI = 64, BO = 64 };
  float *big = calloc(BT * BI + BO * BI + BT * BO, sizeof(float));
  signal(SIGXFSZ, SIG_IGN);
  struct rlimit old, lim;
  ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
  lim = old;
  lim.rlim_cur = 4096;
  ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
  hot_status st = hot_capture_write(path, "new", 1, BT, BO, BI, HOT_DT_F32, big, big + BT * BI,
                                    big + BT * BI + BO * BI, err, sizeof err);
  ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &old), 0);
  ck_assert_msg(st == HOT_ERR_IO && strstr(err, "cannot write"), "%s: %s", hot_status_name(st), err);
  free(big);
  size_t n1;
  unsigned char *after = slurp(path, &n1);
  ck_assert_uint_eq(n0, n1);
  ck_assert_int_eq(memcmp(before, after, n0), 0);
  free(before);
  free(after);
  ck_assert_int_eq(tmp_files(dir), 0);
  /* a successful write replaces the old file */
  gy[0] = -7;
  ck_assert_int_eq(hot_capture_write(path, "new", 1, 2, 2, 3, HOT_DT_F32, x, w, gy, err, sizeof err),
                   HOT_OK);
  hot_capture c;
  ck_assert_int_eq(capture_read(path, &c, err, sizeof err), HOT_OK);
  ck_assert_str_eq(c.name, "new");
  ck_assert(c.g_y[0] == -7.0f);
  capture_free(&c);
  ck_assert_int_eq(tmp_files(dir), 0);
  rm_tree(dir);
}
END_TEST

/* Temporary names already taken (a crashed writer of an earlier process with the same pid): the
 * writer takes the next name and leaves those files alone. Runs first in its process, so the
 * writer's name counter starts at 0. */
START_TEST(stale_temporary_names_skipped) {
  char dir[256], path[400], stale[3][440], err[512];
  ck_assert_ptr_nonnull(tmp_dir(dir));
  snprintf(path, sizeof path, "%s/s.hotcap", dir);
  for (int i = 0; i < 3; ++i) {
    snprintf(stale[i], sizeof stale[i], "%s.tmp-%ld-%d", path, (long)getpid(), i);
    spit(stale[i], (const unsigned char *)"stale", 5);
  }
  float x[2] = {1, 2}, w[2] = {3, 4}, gy[1] = {5};
  ck_assert_msg(hot_capture_write(path, "fc", 1, 1, 1, 2, HOT_DT_F32, x, w, gy, err,
                                  sizeof err) == HOT_OK, "%s", err);
  hot_capture c;
  ck_assert_int_eq(capture_read(path, &c, err, sizeof err), HOT_OK);
  ck_assert(c.g_y[0] == 5.0f);
  capture_free(&c);
  for (int i = 0; i < 3; ++i) {
    size_t n;
    unsigned char *d = slurp(stale[i], &n);
    ck_assert_uint_eq(n, 5);
    free(d);
  }
  ck_assert_int_eq(tmp_files(dir), 3);
  rm_tree(dir);
}
END_TEST

/* Each allocation of a write and of a read failed in turn: HOT_ERR_NOMEM with a message naming
 * the file, no file or temporary file left by the writer, nothing returned (or leaked: the
 * valgrind run) by the reader. */
START_TEST(out_of_memory) {
  char dir[256], path[400], err[512];
  ck_assert_ptr_nonnull(tmp_dir(dir));
  snprintf(path, sizeof path, "%s/m.hotcap", dir);
  float x[6] = {1, 2, 3, 4, 5, 6}, w[6] = {1, 2, 3, 4, 5, 6}, gy[4] = {1, 2, 3, 4};
  size_t writes = 0, reads = 0;
  for (size_t k = 1;; ++k) {
    g_mallocs = 0;
    g_fail_at = k;
    hot_status st = hot_capture_write(path, "fc", 1, 2, 2, 3, HOT_DT_F32, x, w, gy, err, sizeof err);
    g_fail_at = 0;
    if (st == HOT_OK) break;
    ck_assert_msg(st == HOT_ERR_NOMEM && strstr(err, path) && strstr(err, "out of memory"),
                  "allocation %zu: %s: %s", k, hot_status_name(st), err);
    ck_assert_int_eq(access(path, F_OK), -1);
    ck_assert_int_eq(tmp_files(dir), 0);
    ++writes;
  }
  ck_assert_uint_ge(writes, 2); /* the buffer and the temporary name */
  for (size_t k = 1;; ++k) {
    hot_capture c;
    g_mallocs = 0;
    g_fail_at = k;
    int st = capture_read(path, &c, err, sizeof err);
    g_fail_at = 0;
    if (st == HOT_OK) {
      capture_free(&c);
      break;
    }
    ck_assert_msg(st == HOT_ERR_NOMEM && strstr(err, path) && strstr(err, "out of memory"),
                  "allocation %zu: %d: %s", k, st, err);
    ck_assert_ptr_null(c.x);
    ck_assert_ptr_null(c.w);
    ck_assert_ptr_null(c.g_y);
    ++reads;
  }
  ck_assert_uint_ge(reads, 4); /* the buffer and three tensors */
  rm_tree(dir);
}
END_TEST

int main(void) {
  Suite *s = suite_create("runtime_capture");
  TCase *t = tcase_create("capture");
  tcase_set_timeout(t, 120);
  tcase_add_test(t, stale_temporary_names_skipped);
  tcase_add_test(t, round_trip);
  tcase_add_test(t, every_corruption_detected);
  tcase_add_test(t, every_truncation_refused);
  tcase_add_test(t, huge_sizes_refused_without_allocating);
  tcase_add_test(t, bad_fields_under_valid_checksum);
  tcase_add_test(t, bad_arguments);
  tcase_add_test(t, unwritable_paths);
  tcase_add_test(t, out_of_memory);
  suite_add_tcase(s, t);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
