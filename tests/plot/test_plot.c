/* test_plot.c — tune/plot.c: the PNG is parsed by this file's own reader (signature, chunk
 * CRCs, the zlib stream's stored blocks, Adler-32, exact data size, filter bytes, palette), the
 * SVG by its own well-formedness checker; the two formats agree pixel for pixel on markers;
 * nice ticks; the errors; atomic, deterministic writes. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plot.h"

/* ---- files and a scratch folder ------------------------------------------------------------ */

static char g_dir[64];

static void scratch_setup(void) {
  snprintf(g_dir, sizeof g_dir, "plot-test-XXXXXX");
  ck_assert_msg(mkdtemp(g_dir) != NULL, "mkdtemp failed");
}

static void scratch_teardown(void) {
  DIR *d = opendir(g_dir);
  if (!d) return;
  struct dirent *e;
  char p[512];
  while ((e = readdir(d)) != NULL) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    snprintf(p, sizeof p, "%s/%s", g_dir, e->d_name);
    if (remove(p) != 0) rmdir(p);
  }
  closedir(d);
  rmdir(g_dir);
}

static const char *in_dir(const char *name) {
  static char p[8][512];
  static int k;
  k = (k + 1) % 8;
  snprintf(p[k], sizeof p[k], "%s/%s", g_dir, name);
  return p[k];
}

/* Number of entries of the scratch folder (besides . and ..). */
static int dir_entries(void) {
  DIR *d = opendir(g_dir);
  ck_assert(d != NULL);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
  closedir(d);
  return n;
}

static unsigned char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  ck_assert_msg(f != NULL, "cannot open %s", path);
  unsigned char *p = NULL;
  size_t n = 0, cap = 0;
  for (;;) {
    if (n == cap) {
      cap = cap ? 2 * cap : 65536;
      p = realloc(p, cap + 1);
      ck_assert(p != NULL);
    }
    size_t k = fread(p + n, 1, cap - n, f);
    if (k == 0) break;
    n += k;
  }
  fclose(f);
  p[n] = '\0';
  *len = n;
  return p;
}

static void write_ok(const char *path, const hot_plot_point *pts, int n, const hot_plot_opts *o) {
  char err[256] = "";
  int rc = hot_plot_write(path, pts, n, o, err, sizeof err);
  ck_assert_msg(rc == 0, "hot_plot_write(%s) failed: %s", path, err);
  ck_assert_str_eq(err, "");
}

/* Expects an error whose message contains every non-NULL string of want. */
static void write_err(const char *path, const hot_plot_point *pts, int n, const hot_plot_opts *o,
                      const char *w1, const char *w2) {
  char err[256] = "";
  int rc = hot_plot_write(path, pts, n, o, err, sizeof err);
  printf("expected error: %s\n", err);
  ck_assert_msg(rc == -1, "accepted; expected an error with \"%s\"", w1);
  ck_assert_msg(strchr(err, '\n') == NULL, "message is not one line: %s", err);
  ck_assert_msg(strstr(err, w1) != NULL, "error \"%s\" lacks \"%s\"", err, w1);
  if (w2) ck_assert_msg(strstr(err, w2) != NULL, "error \"%s\" lacks \"%s\"", err, w2);
}

/* ---- a PNG reader (only what the writer may produce: palette or RGB, stored deflate) ------- */

static uint32_t crc32_bitwise(const unsigned char *p, size_t n, uint32_t crc) {
  crc = ~crc;
  for (size_t i = 0; i < n; ++i) {
    crc ^= p[i];
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

static uint32_t be32(const unsigned char *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

typedef struct {
  int w, h, depth, ctype, nblocks, nchunks;
  unsigned char pal[256][3];
  int npal;
  unsigned char *rgb; /* w * h * 3 */
} png_img;

/* Decodes data into im (im->rgb: malloc'ed, also on failure); returns NULL or the reason it is
 * not a valid PNG of the expected kind. z and raw: scratch, freed by the caller. */
static const char *png_decode(const unsigned char *d, size_t n, png_img *im, unsigned char **zp,
                              unsigned char **rawp) {
  static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  memset(im, 0, sizeof *im);
  if (n < 8 || memcmp(d, sig, 8) != 0) return "bad signature";
  size_t o = 8, zn = 0;
  unsigned char *z = *zp = malloc(n);
  int seen_iend = 0, seen_ihdr = 0;
  while (o + 12 <= n && !seen_iend) {
    uint32_t len = be32(d + o);
    if (o + 12 + len > n) return "chunk runs past the end";
    const unsigned char *type = d + o + 4, *data = d + o + 8;
    if (crc32_bitwise(type, 4 + (size_t)len, 0) != be32(data + len)) return "chunk CRC mismatch";
    ++im->nchunks;
    if (!memcmp(type, "IHDR", 4)) {
      if (len != 13 || seen_ihdr) return "bad IHDR";
      seen_ihdr = 1;
      im->w = (int)be32(data);
      im->h = (int)be32(data + 4);
      im->depth = data[8];
      im->ctype = data[9];
      if (data[10] || data[11] || data[12]) return "compression/filter/interlace not 0";
    } else if (!memcmp(type, "PLTE", 4)) {
      if (len % 3 || len / 3 > 256) return "bad PLTE";
      im->npal = (int)len / 3;
      memcpy(im->pal, data, len);
    } else if (!memcmp(type, "IDAT", 4)) {
      memcpy(z + zn, data, len);
      zn += len;
    } else if (!memcmp(type, "IEND", 4)) {
      seen_iend = 1;
    } else if (!(type[0] & 0x20)) {
      return "unknown critical chunk";
    }
    o += 12 + len;
  }
  if (!seen_ihdr || !seen_iend || o != n) return "IHDR/IEND missing or bytes after IEND";
  if (im->ctype == 3 && im->npal == 0) return "palette image without PLTE";
  int chans = im->ctype == 2 ? 3 : im->ctype == 3 ? 1 : 0;
  if (!chans || (im->ctype == 2 && im->depth != 8) ||
      (im->ctype == 3 && im->depth != 1 && im->depth != 2 && im->depth != 4 && im->depth != 8))
    return "unexpected colour type / bit depth";
  /* zlib: header, stored blocks only, Adler-32 */
  if (zn < 6 || (z[0] & 0x0F) != 8 || ((z[0] << 8) | z[1]) % 31 != 0 || (z[1] & 0x20))
    return "bad zlib header";
  size_t rowbytes = ((size_t)im->w * (size_t)chans * (size_t)im->depth + 7) / 8 + 1;
  size_t want = rowbytes * (size_t)im->h;
  unsigned char *raw = *rawp = malloc(want + 65536);
  size_t rn = 0, zo = 2;
  for (int last = 0; !last;) {
    if (zo + 5 > zn) return "deflate stream truncated";
    if ((z[zo] >> 1) & 3) return "not a stored deflate block";
    last = z[zo] & 1;
    size_t len = z[zo + 1] | (size_t)z[zo + 2] << 8, nlen = z[zo + 3] | (size_t)z[zo + 4] << 8;
    if ((len ^ 0xFFFF) != nlen) return "stored block LEN/NLEN mismatch";
    zo += 5;
    if (zo + len > zn || rn + len > want) return "stored block too long";
    memcpy(raw + rn, z + zo, len);
    rn += len;
    zo += len;
    ++im->nblocks;
  }
  if (zo + 4 != zn) return "Adler-32 missing or data after it";
  uint32_t a = 1, b = 0;
  for (size_t i = 0; i < rn; ++i) {
    a = (a + raw[i]) % 65521u;
    b = (b + a) % 65521u;
  }
  if (be32(z + zo) != (b << 16 | a)) return "Adler-32 mismatch";
  if (rn != want) return "image data size is not height * (row bytes + 1)";
  im->rgb = malloc((size_t)im->w * (size_t)im->h * 3);
  for (int y = 0; y < im->h; ++y) {
    const unsigned char *r = raw + (size_t)y * rowbytes;
    if (r[0] != 0) return "filter byte other than 0";
    for (int x = 0; x < im->w; ++x) {
      unsigned char *px = im->rgb + ((size_t)y * (size_t)im->w + (size_t)x) * 3;
      if (im->ctype == 2) {
        memcpy(px, r + 1 + 3 * x, 3);
      } else {
        size_t bit = (size_t)x * (size_t)im->depth;
        int idx = (r[1 + bit / 8] >> (8 - im->depth - (int)(bit % 8))) & ((1 << im->depth) - 1);
        if (idx >= im->npal) return "palette index out of range";
        memcpy(px, im->pal[idx], 3);
      }
    }
  }
  return NULL;
}

static const char *png_read(const unsigned char *d, size_t n, png_img *im) {
  unsigned char *z = NULL, *raw = NULL;
  const char *why = png_decode(d, n, im, &z, &raw);
  free(z);
  free(raw);
  return why;
}

static png_img load_png(const char *path) {
  size_t n;
  unsigned char *d = slurp(path, &n);
  png_img im;
  const char *why = png_read(d, n, &im);
  ck_assert_msg(why == NULL, "%s: %s", path, why ? why : "");
  free(d);
  return im;
}

static unsigned pixel(const png_img *im, int x, int y) {
  ck_assert(x >= 0 && y >= 0 && x < im->w && y < im->h);
  const unsigned char *p = im->rgb + ((size_t)y * (size_t)im->w + (size_t)x) * 3;
  return (unsigned)p[0] << 16 | (unsigned)p[1] << 8 | p[2];
}

/* ---- SVG: a well-formedness checker and attribute readers --------------------------------- */

static int is_name(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_' || c == ':' || c == '.';
}

/* An entity at p ("&amp;" etc.): its length, or 0. */
static int entity(const char *p) {
  static const char *const ents[] = {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"};
  for (int i = 0; i < 5; ++i)
    if (!strncmp(p, ents[i], strlen(ents[i]))) return (int)strlen(ents[i]);
  return 0;
}

/* NULL when xml is well-formed for this test's purpose (one root element, tags balanced and
 * properly nested, attributes quoted, every & an entity, no raw < or > in text or values, no
 * control characters); otherwise the reason. */
static const char *xml_check(const char *xml) {
  const char *stack[64];
  size_t slen[64];
  int depth = 0, roots = 0;
  const char *p = xml;
  if (!strncmp(p, "<?xml", 5)) {
    p = strstr(p, "?>");
    if (!p) return "unterminated XML declaration";
    p += 2;
  }
  while (*p) {
    if ((unsigned char)*p < 0x20 && *p != '\n' && *p != '\t' && *p != '\r') return "control char";
    if (*p == '&') {
      int k = entity(p);
      if (!k) return "bare & in text";
      p += k;
    } else if (*p == '>') {
      return "raw > in text";
    } else if (*p == '<') {
      if (!strncmp(p, "<!--", 4)) {
        p = strstr(p, "-->");
        if (!p) return "unterminated comment";
        p += 3;
        continue;
      }
      int closing = p[1] == '/';
      const char *nm = p + 1 + closing;
      size_t nl = 0;
      while (is_name(nm[nl])) ++nl;
      if (!nl) return "tag without a name";
      p = nm + nl;
      if (closing) {
        if (*p != '>') return "junk in a closing tag";
        if (!depth) return "closing tag without an open one";
        --depth;
        if (slen[depth] != nl || strncmp(stack[depth], nm, nl)) return "mismatched closing tag";
        ++p;
        continue;
      }
      for (;;) { /* attributes */
        while (*p == ' ' || *p == '\n') ++p;
        if (*p == '>' || (p[0] == '/' && p[1] == '>')) break;
        size_t an = 0;
        while (is_name(p[an])) ++an;
        if (!an || p[an] != '=' || p[an + 1] != '"') return "attribute not name=\"value\"";
        p += an + 2;
        while (*p && *p != '"') {
          if (*p == '<' || *p == '>') return "raw < or > in an attribute";
          if (*p == '&') {
            int k = entity(p);
            if (!k) return "bare & in an attribute";
            p += k - 1;
          }
          ++p;
        }
        if (!*p) return "unterminated attribute";
        ++p;
      }
      if (depth == 0 && ++roots > 1) return "more than one root element";
      if (*p == '/') {
        p += 2;
      } else {
        if (depth == 64) return "too deep";
        stack[depth] = nm;
        slen[depth++] = nl;
        ++p;
      }
    } else {
      if (depth == 0 && *p != '\n' && *p != ' ') return "text outside the root element";
      ++p;
    }
  }
  if (depth) return "unclosed element";
  if (roots != 1) return "no root element";
  return NULL;
}

static int count(const char *hay, const char *needle) {
  int n = 0;
  for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle)) ++n;
  return n;
}

/* The value of attribute name in the element starting at el (up to its '>'), as a double;
 * for "fill" the colour as 0xRRGGBB. */
static double attr_num(const char *el, const char *name) {
  char key[32];
  snprintf(key, sizeof key, " %s=\"", name);
  const char *end = strchr(el, '>'), *a = strstr(el, key);
  ck_assert_msg(a && a < end, "no %s in %.60s", name, el);
  a += strlen(key);
  if (*a == '#') return (double)strtoul(a + 1, NULL, 16);
  return strtod(a, NULL);
}

typedef struct {
  double cx, cy, r;
  unsigned fill;
} svg_circle;

/* The circles of class cls, in document order. */
static int svg_circles(const char *svg, const char *cls, svg_circle *out, int max) {
  char key[64];
  snprintf(key, sizeof key, "<circle class=\"%s\"", cls);
  int n = 0;
  for (const char *p = strstr(svg, key); p && n < max; p = strstr(p + 1, key), ++n) {
    out[n].cx = attr_num(p, "cx");
    out[n].cy = attr_num(p, "cy");
    out[n].r = attr_num(p, "r");
    const char *end = strchr(p, '>');
    const char *f = strstr(p, " fill=\"#");
    out[n].fill = f && f < end ? (unsigned)attr_num(p, "fill") : 0xFFFFFFFFu;
  }
  return n;
}

/* The texts of <text class="cls"> elements, parsed as numbers, in order. */
static int svg_ticks(const char *svg, const char *cls, double *v, char lab[][32], int max) {
  char key[64];
  snprintf(key, sizeof key, "<text class=\"%s\"", cls);
  int n = 0;
  for (const char *p = strstr(svg, key); p && n < max; p = strstr(p + 1, key), ++n) {
    const char *t = strchr(p, '>') + 1, *e = strchr(t, '<');
    snprintf(lab[n], 32, "%.*s", (int)(e - t), t);
    char *end;
    v[n] = strtod(lab[n], &end);
    ck_assert_msg(*end == '\0', "tick label \"%s\" is not a number", lab[n]);
  }
  return n;
}

static char *slurp_text(const char *path) {
  size_t n;
  return (char *)slurp(path, &n);
}

/* ---- sample data ------------------------------------------------------------------------- */

static const hot_plot_point k_pts[] = {
    {0.8, 0.02, "token", 0, 1, 0},  {1.1, 0.008, "sample", 0, 1, 1}, {1.5, 0.004, "k8", 0, 1, 0},
    {1.3, 0.03, "slow", 0, 0, 0},   {2.2, 0.006, NULL, 0, 0, 0},     {0.6, 0.05, "a", 1, 1, 0},
    {0.9, 0.012, "b", 1, 1, 0},     {2.5, 0.002, "c", 1, 1, 0},      {NAN, 0.1, "no time", 1, 0, 0},
    {1.9, 0.015, "d", 2, 0, 0},     {1.7, NAN, "no error", 2, 0, 0},
    {INFINITY, 0.01, "inf", 2, 0, 0},
};
enum { K_N = (int)(sizeof k_pts / sizeof k_pts[0]), K_FINITE = 9 };

static hot_plot_opts sample_opts(void) {
  hot_plot_opts o;
  memset(&o, 0, sizeof o);
  o.title = "fc1 sweep";
  o.x_label = "time (ms)";
  o.y_label = "relative error";
  o.series_names[0] = "fc1";
  o.series_names[1] = "fc2";
  o.series_names[2] = "fc3";
  o.n_series = 3;
  o.log_y = 1;
  return o;
}

/* ---- tests ------------------------------------------------------------------------------- */

START_TEST(xml_checker_rejects_broken_documents) {
  ck_assert_ptr_null(xml_check("<?xml version=\"1.0\"?>\n<a x=\"1\"><b/>t &amp; u</a>\n"));
  ck_assert_ptr_nonnull(xml_check("<a><b></a></b>"));
  ck_assert_ptr_nonnull(xml_check("<a>x & y</a>"));
  ck_assert_ptr_nonnull(xml_check("<a t=\"<\"/>"));
  ck_assert_ptr_nonnull(xml_check("<a>1 > 0</a>"));
  ck_assert_ptr_nonnull(xml_check("<a><b></a>"));
  ck_assert_ptr_nonnull(xml_check("<a/><b/>"));
  ck_assert_ptr_nonnull(xml_check("<a t=1/>"));
}
END_TEST

START_TEST(png_reader_rejects_corruption) {
  hot_plot_opts o = sample_opts();
  write_ok(in_dir("p.png"), k_pts, K_N, &o);
  size_t n;
  unsigned char *d = slurp(in_dir("p.png"), &n);
  png_img im;
  ck_assert_ptr_null(png_read(d, n, &im));
  free(im.rgb);
  d[40] ^= 1; /* inside PLTE: its CRC no longer matches */
  ck_assert_str_eq(png_read(d, n, &im), "chunk CRC mismatch");
  free(im.rgb);
  d[40] ^= 1;
  d[n - 20] ^= 1; /* in the last stored block, before the Adler-32: fix the chunk CRC */
  size_t idat = 8;
  while (memcmp(d + idat + 4, "IDAT", 4)) idat += 12 + be32(d + idat);
  uint32_t len = be32(d + idat), crc = crc32_bitwise(d + idat + 4, 4 + (size_t)len, 0);
  unsigned char *c = d + idat + 8 + len;
  c[0] = (unsigned char)(crc >> 24), c[1] = (unsigned char)(crc >> 16);
  c[2] = (unsigned char)(crc >> 8), c[3] = (unsigned char)crc;
  ck_assert_str_eq(png_read(d, n, &im), "Adler-32 mismatch");
  free(im.rgb);
  free(d);
}
END_TEST

START_TEST(png_structure) {
  static const int sizes[][2] = {{0, 0}, {961, 601}, {240, 240}, {1283, 517}};
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; ++k) {
    hot_plot_opts o = sample_opts();
    o.width = sizes[k][0];
    o.height = sizes[k][1];
    write_ok(in_dir("s.png"), k_pts, K_N, &o);
    png_img im = load_png(in_dir("s.png"));
    int W = o.width ? o.width : 960, H = o.height ? o.height : 600;
    ck_assert_int_eq(im.w, W);
    ck_assert_int_eq(im.h, H);
    /* documented format: 4-bit palette, one IDAT of stored blocks: IHDR PLTE IDAT IEND */
    ck_assert_int_eq(im.ctype, 3);
    ck_assert_int_eq(im.depth, 4);
    ck_assert_int_le(im.npal, 16);
    ck_assert_int_eq(im.nchunks, 4);
    size_t raw = (size_t)H * ((size_t)(W + 1) / 2 + 1);
    ck_assert_int_eq(im.nblocks, (int)((raw + 65534) / 65535));
    size_t n;
    free(slurp(in_dir("s.png"), &n));
    /* signature + IHDR + PLTE + IDAT (zlib 2 + 5/block + raw + 4) + IEND */
    ck_assert_uint_eq(n, 8 + 25 + 12 + (size_t)im.npal * 3 + 12 + 2 + 5 * (size_t)im.nblocks +
                             raw + 4 + 12);
    ck_assert_uint_eq(pixel(&im, 0, 0), 0xFFFFFF);
    ck_assert_uint_eq(pixel(&im, W - 1, H - 1), 0xFFFFFF);
    free(im.rgb);
  }
}
END_TEST

/* Every marker of the SVG is drawn at the same pixel in the PNG, in its fill colour; series
 * differ in colour; the chosen ring and the Pareto step line are where the SVG says. */
START_TEST(png_pixels_match_svg) {
  hot_plot_opts o = sample_opts();
  write_ok(in_dir("m.svg"), k_pts, K_N, &o);
  write_ok(in_dir("m.png"), k_pts, K_N, &o);
  char *svg = slurp_text(in_dir("m.svg"));
  png_img im = load_png(in_dir("m.png"));
  svg_circle c[64];
  int n = svg_circles(svg, "pt", c, 64);
  ck_assert_int_eq(n, K_FINITE);
  unsigned series_fill[3] = {0, 0, 0};
  for (int i = 0; i < n; ++i) {
    int x = (int)floor(c[i].cx), y = (int)floor(c[i].cy);
    ck_assert_msg(c[i].cx - x == 0.5 && c[i].cy - y == 0.5, "marker not on a pixel centre");
    ck_assert_uint_ne(c[i].fill, 0xFFFFFF);
    for (int d = -1; d <= 1; ++d) { /* the centre and its neighbours */
      ck_assert_msg(pixel(&im, x + d, y) == c[i].fill, "marker %d: pixel (%d,%d) is %06x, not %06x",
                    i, x + d, y, pixel(&im, x + d, y), c[i].fill);
      ck_assert_uint_eq(pixel(&im, x, y + d), c[i].fill);
    }
    ck_assert_uint_eq(pixel(&im, x + (int)c[i].r + 3, y + (int)c[i].r + 3) == c[i].fill, 0);
  }
  /* fills by series: the markers come dominated first, then Pareto, then chosen; find them by
   * the tooltip's label */
  const char *labels[3] = {"<title>token", "<title>a:", "<title>d:"};
  for (int sr = 0; sr < 3; ++sr) {
    const char *t = strstr(svg, labels[sr]);
    ck_assert_ptr_nonnull(t);
    const char *el = t;
    while (strncmp(el, "<circle", 7)) --el;
    series_fill[sr] = (unsigned)attr_num(el, "fill");
  }
  ck_assert_uint_ne(series_fill[0], series_fill[1]);
  ck_assert_uint_ne(series_fill[1], series_fill[2]);
  ck_assert_uint_ne(series_fill[0], series_fill[2]);
  /* the chosen ring: its band in the stroke colour, ring and marker separated by background */
  svg_circle ring[4];
  ck_assert_int_eq(svg_circles(svg, "chosen", ring, 4), 1);
  const char *rel = strstr(svg, "<circle class=\"chosen\"");
  double sw = attr_num(rel, "stroke-width");
  int rx = (int)floor(ring[0].cx), ry = (int)floor(ring[0].cy);
  int outer = (int)floor(ring[0].r + sw / 2);
  ck_assert_uint_eq(pixel(&im, rx + outer - 1, ry), 0x000000);
  ck_assert_uint_eq(pixel(&im, rx, ry - outer + 1), 0x000000);
  ck_assert_uint_ne(pixel(&im, rx - outer + (int)sw + 1, ry), 0x000000); /* not filled */
  /* Pareto step of series 0: from "token" (0.8, 0.02) right at its error to x of "sample" */
  int tx = -1, ty = -1, sx = -1;
  for (int i = 0; i < n; ++i) {
    const char *el = strstr(svg, "<circle class=\"pt\"");
    for (int j = 0; j < i; ++j) el = strstr(el + 1, "<circle class=\"pt\"");
    if (!strncmp(strchr(el, '>'), "><title>token", 13)) tx = (int)c[i].cx, ty = (int)c[i].cy;
    if (!strncmp(strchr(el, '>'), "><title>sample", 14)) sx = (int)c[i].cx;
  }
  ck_assert(tx >= 0 && sx > tx + 10);
  ck_assert_uint_eq(pixel(&im, (tx + sx) / 2, ty), series_fill[0]);
  ck_assert_int_eq(count(svg, "<polyline class=\"front\""), 2); /* series 0 and 1, not 2 */
  free(im.rgb);
  free(svg);
}
END_TEST

/* The text of the PNG is drawn: a title puts ink at the top, no title leaves it blank. */
START_TEST(png_text_drawn) {
  hot_plot_opts o = sample_opts();
  write_ok(in_dir("t.png"), k_pts, K_N, &o);
  png_img a = load_png(in_dir("t.png"));
  o.title = NULL;
  o.y_label = NULL;
  write_ok(in_dir("u.png"), k_pts, K_N, &o);
  png_img b = load_png(in_dir("u.png"));
  int ink_a = 0, ink_b = 0;
  for (int y = 0; y < 36; ++y)
    for (int x = 0; x < 960; ++x) {
      ink_a += pixel(&a, x, y) == 0x222222;
      ink_b += y < 12 && pixel(&b, x, y) != 0xFFFFFF;
    }
  ck_assert_int_gt(ink_a, 50);
  ck_assert_int_eq(ink_b, 0);
  free(a.rgb);
  free(b.rgb);
}
END_TEST

START_TEST(svg_markers_and_escaping) {
  hot_plot_point p[K_N];
  memcpy(p, k_pts, sizeof p);
  p[0].label = "a<&>\"'b";
  p[1].label = "ch\x01osen\xff\xc3\xa9";
  hot_plot_opts o = sample_opts();
  o.title = "T<&>\"'T";
  o.x_label = "time \xc2\xb5s & <ms>";
  o.y_label = "err 'rel'";
  o.series_names[1] = "s\"1\"";
  write_ok(in_dir("e.svg"), p, K_N, &o);
  char *svg = slurp_text(in_dir("e.svg"));
  const char *why = xml_check(svg);
  ck_assert_msg(why == NULL, "SVG not well-formed: %s", why ? why : "");
  ck_assert_int_eq(count(svg, "<circle class=\"pt\""), K_FINITE);
  ck_assert_ptr_nonnull(strstr(svg, "viewBox=\"0 0 960 600\""));
  ck_assert_int_ge(count(svg, "a&lt;&amp;&gt;&quot;&apos;b"), 2); /* tooltip and Pareto label */
  ck_assert_int_eq(count(svg, "T&lt;&amp;&gt;&quot;&apos;T"), 2);   /* <title> and the text */
  ck_assert_ptr_nonnull(strstr(svg, ">time \xc2\xb5s &amp; &lt;ms&gt;</text>"));
  ck_assert_ptr_nonnull(strstr(svg, ">err &apos;rel&apos;</text>"));
  ck_assert_ptr_nonnull(strstr(svg, ">s&quot;1&quot;</text>"));
  ck_assert_ptr_nonnull(strstr(svg, ">ch?osen?\xc3\xa9</text>")); /* control, bad byte -> ? */
  ck_assert_ptr_null(strstr(svg, "a<&"));
  ck_assert_int_eq(count(svg, "<text class=\"chosen-label\""), 1);
  free(svg);
  /* the PNG of the same data (non-ASCII drawn as '?') */
  write_ok(in_dir("e.png"), p, K_N, &o);
  png_img im = load_png(in_dir("e.png"));
  free(im.rgb);
}
END_TEST

/* Ticks: 1-2-5 steps on linear axes covering the data, decades on log axes, for ranges of
 * every magnitude and sign. */
START_TEST(nice_ticks) {
  static const double ranges[][2] = {{0.3, 9.7},     {0, 1},           {-3, 7},
                                     {1e-7, 3e-7},   {1e6, 8.3e6},     {1e12, 1e12},
                                     {0, 0},         {5, 5},           {-2.5, -0.1},
                                     {123456, 123457}, {0.001, 0.0011}, {7e-300, 9e-300}};
  for (size_t k = 0; k < sizeof ranges / sizeof ranges[0]; ++k) {
    hot_plot_point p[2] = {{ranges[k][0], 1, NULL, 0, 0, 0}, {ranges[k][1], 2, NULL, 0, 0, 0}};
    write_ok(in_dir("k.svg"), p, 2, NULL);
    char *svg = slurp_text(in_dir("k.svg"));
    double v[64];
    char lab[64][32];
    int n = svg_ticks(svg, "xtick", v, lab, 64);
    ck_assert_msg(n >= 2 && n <= 13, "range %g..%g: %d ticks", ranges[k][0], ranges[k][1], n);
    ck_assert_msg(v[0] <= ranges[k][0] && v[n - 1] >= ranges[k][1],
                  "range %g..%g not covered by %s..%s", ranges[k][0], ranges[k][1], lab[0],
                  lab[n - 1]);
    double step = v[1] - v[0];
    double e = floor(log10(step) + 1e-9), m = step / pow(10, e);
    ck_assert_msg(fabs(m - 1) < 1e-6 || fabs(m - 2) < 1e-6 || fabs(m - 5) < 1e-6,
                  "range %g..%g: step %g (%s, %s) is not 1, 2 or 5 x 10^k", ranges[k][0],
                  ranges[k][1], step, lab[0], lab[1]);
    for (int i = 1; i < n; ++i)
      ck_assert_msg(fabs(v[i] - v[i - 1] - step) <= 1e-6 * step, "uneven ticks %s %s", lab[i - 1],
                    lab[i]);
    step = (fabs(m - 1) < 1e-6 ? 1 : fabs(m - 2) < 1e-6 ? 2 : 5) * pow(10, e);
    for (int i = 0; i < n; ++i) {
      double q = v[i] / step;
      ck_assert_msg(fabs(q - nearbyint(q)) < 1e-6, "tick %s not a multiple of the step", lab[i]);
    }
    free(svg);
  }
  /* log axes: decades; one decade also 2 and 5 */
  static const struct {
    double lo, hi;
    const char *want;
  } logs[] = {{0.002, 0.3, "0.001 0.01 0.1 1"},
              {0.02, 0.08, "0.01 0.02 0.05 0.1"},
              {1e6, 3e8, "1e6 1e7 1e8 1e9"},
              {1e-30, 1e30, "1e-30 1e-20 1e-10 1 1e10 1e20 1e30"},
              {1e-3, 1e-3, "0.001 0.002 0.005 0.01"},
              {3, 3000, "1 10 100 1000 10000"}};
  for (size_t k = 0; k < sizeof logs / sizeof logs[0]; ++k) {
    hot_plot_point p[2] = {{1, logs[k].lo, NULL, 0, 0, 0}, {2, logs[k].hi, NULL, 0, 0, 0}};
    hot_plot_opts o;
    memset(&o, 0, sizeof o);
    o.log_y = 1;
    write_ok(in_dir("l.svg"), p, 2, &o);
    char *svg = slurp_text(in_dir("l.svg"));
    double v[64];
    char lab[64][32], all[512] = "";
    int n = svg_ticks(svg, "ytick", v, lab, 64);
    for (int i = 0; i < n; ++i) {
      strcat(all, i ? " " : "");
      strcat(all, lab[i]);
    }
    ck_assert_msg(!strcmp(all, logs[k].want), "log %g..%g: ticks \"%s\", want \"%s\"", logs[k].lo,
                  logs[k].hi, all, logs[k].want);
    free(svg);
  }
}
END_TEST

START_TEST(errors) {
  hot_plot_opts o = sample_opts();
  write_err(in_dir("x.jpg"), k_pts, K_N, &o, "\".jpg\"", "x.jpg");
  write_err(in_dir("x.sv"), k_pts, K_N, &o, "\".sv\"", NULL);
  write_err(in_dir("noext"), k_pts, K_N, &o, "no extension", "noext");
  write_err("dir.png/file", k_pts, K_N, &o, "no extension", NULL);
  write_err(NULL, k_pts, K_N, &o, "no output path", NULL);
  write_ok(in_dir("UP.PNG"), k_pts, K_N, &o);
  write_ok(in_dir("Mixed.Svg"), k_pts, K_N, &o);
  write_err(in_dir("x.png"), k_pts, 0, &o, "no points", NULL);
  write_err(in_dir("x.svg"), NULL, 3, &o, "no points", "NULL");
  hot_plot_point nan3[3] = {
      {NAN, 1, "a", 0, 0, 0}, {1, NAN, "b", 0, 0, 0}, {NAN, NAN, NULL, 0, 0, 0}};
  write_err(in_dir("x.png"), nan3, 3, &o, "none of the 3 points", NULL);
  hot_plot_point neg[3] = {
      {1, 0.1, "a", 0, 0, 0}, {2, 0, "zero-err", 0, 0, 0}, {3, 0.2, NULL, 0, 0, 0}};
  write_err(in_dir("x.png"), neg, 3, &o, "point 1 \"zero-err\"", "log y axis");
  o.log_y = 0;
  write_ok(in_dir("lin.png"), neg, 3, &o); /* the same data on a linear axis */
  o.log_x = 1;
  neg[2].x = -3;
  write_err(in_dir("x.svg"), neg, 3, &o, "point 2: x = -3", "log x axis");
  neg[2].x = NAN; /* not plotted: not checked */
  write_ok(in_dir("logx.svg"), neg, 3, &o);
  o = sample_opts();
  hot_plot_point bad[2] = {{1, 0.1, "a", 0, 0, 0}, {2, 0.2, "b", 8, 0, 0}};
  write_err(in_dir("x.png"), bad, 2, &o, "point 1 \"b\": series 8", NULL);
  bad[1].series = -1;
  bad[1].x = NAN;
  write_err(in_dir("x.png"), bad, 2, &o, "series -1", NULL);
  o.n_series = 9;
  write_err(in_dir("x.png"), k_pts, K_N, &o, "n_series = 9", NULL);
  o = sample_opts();
  o.width = 239;
  write_err(in_dir("x.png"), k_pts, K_N, &o, "size 239 x 600", NULL);
  o.width = 640;
  o.height = 8193;
  write_err(in_dir("x.svg"), k_pts, K_N, &o, "size 640 x 8193", NULL);
  o.height = -5;
  write_err(in_dir("x.svg"), k_pts, K_N, &o, "size 640 x -5", NULL);
  o = sample_opts();
  hot_plot_point huge[2] = {{1, 0.1, NULL, 0, 0, 0}, {1e308, 0.2, NULL, 0, 0, 0}};
  write_err(in_dir("x.svg"), huge, 2, &o, "x values too large", NULL);
  /* a message is truncated to errlen, NUL-terminated */
  char small[8];
  ck_assert_int_eq(hot_plot_write(in_dir("x.jpg"), k_pts, K_N, &o, small, sizeof small), -1);
  ck_assert_uint_eq(strlen(small), 7);
  ck_assert_int_eq(hot_plot_write(in_dir("x.jpg"), k_pts, K_N, &o, NULL, 0), -1);
  /* nothing but the successful files was written */
  ck_assert_int_eq(dir_entries(), 4);
}
END_TEST

/* I/O errors name the path, leave no temporary file, and leave an existing file untouched. */
START_TEST(io_errors_and_atomicity) {
  hot_plot_opts o = sample_opts();
  char p[600];
  snprintf(p, sizeof p, "%s/no/such/dir/out.png", g_dir);
  write_err(p, k_pts, K_N, &o, p, "cannot write");
  ck_assert_int_eq(dir_entries(), 0);
  /* the target is a folder: the temporary file is written, the rename fails, it is removed */
  ck_assert_int_eq(mkdir(in_dir("isdir.svg"), 0755), 0);
  write_err(in_dir("isdir.svg"), k_pts, K_N, &o, in_dir("isdir.svg"), "cannot write");
  ck_assert_int_eq(dir_entries(), 1);
  /* an existing plot survives a failed call */
  write_ok(in_dir("keep.svg"), k_pts, K_N, &o);
  size_t n1, n2;
  unsigned char *before = slurp(in_dir("keep.svg"), &n1);
  write_err(in_dir("keep.svg"), k_pts, 0, &o, "no points", NULL);
  unsigned char *after = slurp(in_dir("keep.svg"), &n2);
  ck_assert(n1 == n2 && !memcmp(before, after, n1));
  free(after);
  /* and is replaced by a successful one */
  o.title = "another";
  write_ok(in_dir("keep.svg"), k_pts, K_N, &o);
  after = slurp(in_dir("keep.svg"), &n2);
  ck_assert(n1 != n2 || memcmp(before, after, n1));
  ck_assert_ptr_nonnull(strstr((char *)after, ">another</text>"));
  ck_assert_int_eq(dir_entries(), 2);
  free(before);
  free(after);
}
END_TEST

START_TEST(deterministic) {
  const char *ext[2] = {"png", "svg"};
  for (int k = 0; k < 2; ++k) {
    char a[32], b[32];
    snprintf(a, sizeof a, "a.%s", ext[k]);
    snprintf(b, sizeof b, "b.%s", ext[k]);
    hot_plot_opts o = sample_opts();
    o.log_x = k;
    write_ok(in_dir(a), k_pts, K_N, &o);
    write_ok(in_dir(b), k_pts, K_N, &o);
    size_t na, nb;
    unsigned char *da = slurp(in_dir(a), &na), *db = slurp(in_dir(b), &nb);
    ck_assert_uint_eq(na, nb);
    ck_assert_msg(!memcmp(da, db, na), "%s: two writes differ", ext[k]);
    free(da);
    free(db);
  }
}
END_TEST

/* Glyphs of an SVG text's content (an entity or a UTF-8 sequence is one glyph). */
static int svg_glyphs(const char *t, const char *end) {
  int g = 0;
  while (t < end) {
    if (*t == '&')
      t = strchr(t, ';') + 1;
    else if ((unsigned char)*t >= 0xC0)
      for (++t; t < end && ((unsigned char)*t & 0xC0) == 0x80;) ++t;
    else
      ++t;
    ++g;
  }
  return g;
}

/* Every text stays inside the image (titles and labels clipped, the plot area narrowed for
 * wide tick labels), at every size, for short and long labels. */
START_TEST(texts_inside_image) {
  static const int sizes[][2] = {{0, 0}, {320, 240}, {240, 240}, {1600, 1000}, {700, 300}};
  hot_plot_point wide[3] = {{123456.2, 0, "left", 0, 1, 0}, {123456.9, 1, "right", 0, 1, 1},
                            {123456.5, 0.5, "mid", 1, 0, 0}};
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; ++k)
    for (int set = 0; set < 3; ++set) {
      hot_plot_opts o = sample_opts();
      o.width = sizes[k][0];
      o.height = sizes[k][1];
      const hot_plot_point *p = k_pts;
      int n = K_N;
      if (set == 1) { /* long texts everywhere */
        o.title = "a title far longer than any image of this size can show in one line, surely";
        o.x_label = "an x label that goes on and on well past the width of the small images";
        o.y_label = "a y label that goes on and on well past the width of the small images";
        o.series_names[0] = "a series name that is too long for the legend";
      } else if (set == 2) { /* wide x tick labels, narrow y tick labels */
        o.log_y = 0;
        p = wide;
        n = 3;
      }
      write_ok(in_dir("w.svg"), p, n, &o);
      char *svg = slurp_text(in_dir("w.svg"));
      int W = o.width ? o.width : 960, H = o.height ? o.height : 600, texts = 0;
      for (const char *q = strstr(svg, "<text"); q; q = strstr(q + 1, "<text"), ++texts) {
        double x = attr_num(q, "x"), y = attr_num(q, "y"), sc = attr_num(q, "font-size") / 10;
        const char *t = strchr(q, '>') + 1, *e = strchr(t, '<');
        double w = svg_glyphs(t, e) * 6 * sc - sc;
        const char *anc = strstr(q, "text-anchor=\"");
        double left = x;
        if (anc && anc < t) left = anc[13] == 'm' ? x - w / 2 : x - w;
        ck_assert_msg(left >= 0 && left + w <= W && y - 7 * sc >= 0 && y + sc <= H,
                      "%dx%d set %d: text %.*s at x %g..%g, y %g outside the image", W, H, set,
                      (int)(e - t), t, left, left + w, y);
      }
      ck_assert_int_gt(texts, 8);
      free(svg);
    }
}
END_TEST

/* Values at the ends of the double range: drawn (or refused as too large) without overflow,
 * tooltips exact in their 5 significant digits. */
START_TEST(extreme_values) {
  hot_plot_point p[4] = {{1e-320, 2.5e-310, "sub", 0, 1, 0},
                         {1e300, 9.5e299, "big", 0, 1, 1},
                         {-1e300, 3, "neg", 1, 0, 0},
                         {4.9e-324, 123456789, "min", 1, 0, 0}};
  write_ok(in_dir("x.svg"), p, 4, NULL);
  write_ok(in_dir("x.png"), p, 4, NULL);
  char *svg = slurp_text(in_dir("x.svg"));
  ck_assert_ptr_null(xml_check(svg));
  ck_assert_int_eq(count(svg, "<circle class=\"pt\""), 4);
  ck_assert_ptr_nonnull(strstr(svg, "<title>sub: x = 9.9999e-321, y = 2.5e-310 (Pareto)</title>"));
  ck_assert_ptr_nonnull(strstr(svg, "<title>big: x = 1e300, y = 9.5e299 (Pareto) (chosen)"));
  ck_assert_ptr_nonnull(strstr(svg, "<title>min: x = 4.9407e-324, y = 1.2346e8</title>"));
  free(svg);
  hot_plot_opts o;
  memset(&o, 0, sizeof o);
  o.log_x = o.log_y = 1;
  p[2].x = 2;
  write_ok(in_dir("y.svg"), p, 4, &o);
  write_ok(in_dir("y.png"), p, 4, &o);
  png_img im = load_png(in_dir("y.png"));
  free(im.rgb);
}
END_TEST

/* Many points, all on the front of one series: fast, and still one marker each. */
START_TEST(many_points) {
  enum { N = 20000 };
  hot_plot_point *p = calloc(N, sizeof *p);
  uint32_t r = 12345;
  for (int i = 0; i < N; ++i) {
    r = r * 1664525u + 1013904223u;
    p[i].x = 1 + (r >> 8) % 100000;
    p[i].y = 1.0 / p[i].x;
    p[i].pareto = 1;
    p[i].series = i % 8;
    p[i].chosen = i == 77;
  }
  hot_plot_opts o;
  memset(&o, 0, sizeof o);
  o.log_x = o.log_y = 1;
  o.n_series = 8;
  write_ok(in_dir("n.svg"), p, N, &o);
  write_ok(in_dir("n.png"), p, N, &o);
  char *svg = slurp_text(in_dir("n.svg"));
  ck_assert_int_eq(count(svg, "<circle class=\"pt\""), N);
  ck_assert_int_eq(count(svg, "<circle class=\"chosen\""), 1);
  ck_assert_int_eq(count(svg, "<text class=\"chosen-label\""), 1); /* no label: "chosen" */
  ck_assert_int_eq(count(svg, ">chosen</text>"), 2);                  /* and the legend's */
  ck_assert_ptr_null(xml_check(svg));
  free(svg);
  png_img im = load_png(in_dir("n.png"));
  free(im.rgb);
  free(p);
}
END_TEST

/* hot-tune show's plot: its title whole at the default size (no '~' cut), and four layers whose
 * chosen points ("as written") lie close together: their labels never overlap (the first one
 * always drawn, the others only where there is room; every ring drawn). */
START_TEST(tune_title_and_chosen_labels) {
  hot_plot_point p[8];
  memset(p, 0, sizeof p);
  for (int i = 0; i < 8; ++i) {
    p[i].x = 1.0 + (i % 4) * 0.001 + (i / 4);
    p[i].y = 0.5 + (i % 4) * 0.001 + (i / 4) * 0.2;
    p[i].series = i % 4;
    p[i].pareto = 1;
    p[i].chosen = i < 4; /* four layers, each its point as written, all at the same spot */
    p[i].label = i < 4 ? "as written" : NULL;
  }
  hot_plot_opts o;
  memset(&o, 0, sizeof o);
  o.title = "hot-tune: error vs cost (ringed: the spec as written)"; /* tune/show.c's */
  o.x_label = "bytes saved by the forward (ABC)";
  o.y_label = "error (mean over data of sqrt((gx^2+gw^2)/2))";
  o.n_series = 4;
  const char *names[4] = {"qkv", "proj", "fc1", "fc2"};
  for (int i = 0; i < 4; ++i) o.series_names[i] = names[i];
  write_ok(in_dir("t.svg"), p, 8, &o);
  char *svg = slurp_text(in_dir("t.svg"));
  ck_assert_ptr_nonnull(strstr(svg, ">hot-tune: error vs cost (ringed: the spec as written)</text>"));
  ck_assert_int_eq(count(svg, "<circle class=\"chosen\""), 4);
  /* four places around one spot: at most one label each, so none overlaps another */
  int labels = count(svg, "<text class=\"chosen-label\"");
  ck_assert_int_ge(labels, 1);
  ck_assert_int_le(labels, 4);
  int xs[4], ys[4], k = 0;
  for (const char *q = strstr(svg, "<text class=\"chosen-label\""); q && k < 4;
       q = strstr(q + 1, "<text class=\"chosen-label\"")) {
    ck_assert_int_eq(sscanf(strstr(q, "x=\""), "x=\"%d", &xs[k]), 1);
    ck_assert_int_eq(sscanf(strstr(q, "y=\""), "y=\"%d", &ys[k]), 1);
    ++k;
  }
  for (int i = 0; i < k; ++i)
    for (int j = i + 1; j < k; ++j) ck_assert(xs[i] != xs[j] || ys[i] != ys[j]);
  free(svg);
}
END_TEST

int main(void) {
  Suite *su = suite_create("plot");
  TCase *tc = tcase_create("checkers");
  tcase_add_checked_fixture(tc, scratch_setup, scratch_teardown);
  tcase_add_test(tc, xml_checker_rejects_broken_documents);
  tcase_add_test(tc, png_reader_rejects_corruption);
  suite_add_tcase(su, tc);
  tc = tcase_create("plot");
  tcase_add_checked_fixture(tc, scratch_setup, scratch_teardown);
  tcase_add_test(tc, png_structure);
  tcase_add_test(tc, png_pixels_match_svg);
  tcase_add_test(tc, png_text_drawn);
  tcase_add_test(tc, svg_markers_and_escaping);
  tcase_add_test(tc, nice_ticks);
  tcase_add_test(tc, errors);
  tcase_add_test(tc, io_errors_and_atomicity);
  tcase_add_test(tc, deterministic);
  tcase_add_test(tc, texts_inside_image);
  tcase_add_test(tc, extreme_values);
  tcase_add_test(tc, many_points);
  tcase_add_test(tc, tune_title_and_chosen_labels);
  suite_add_tcase(su, tc);
  SRunner *sr = srunner_create(su);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
