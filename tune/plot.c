/* plot.c — the scatter-plot writer of plot.h: one layout, drawn by one of two canvases (SVG text
 * or a palette raster encoded as PNG with stored deflate blocks). All geometry is in integer
 * pixels (a pixel's centre is its integer coordinate), so the SVG and the PNG agree exactly. */
#define _POSIX_C_SOURCE 200809L
#include "plot.h"

#include "escape.h" /* esc_xml: the one XML escaping */
#include "fileio.h" /* fileio_fopen, fileio_msg_cut */

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- errors and the output buffer --------------------------------------------------------- */

static void set_err(char *err, size_t len, const char *fmt, ...) {
  if (!err || len == 0) return;
  va_list ap;
  va_start(ap, fmt);
  int w = vsnprintf(err, len, fmt, ap);
  va_end(ap);
  if (w > 0) fileio_msg_cut(err, len, (size_t)w);
}

typedef struct {
  unsigned char *p;
  size_t len, cap;
  int oom; /* set on the first failed allocation; later appends are dropped */
} buf;

static void buf_put(buf *b, const void *data, size_t n) {
  if (b->oom) return;
  if (b->len + n > b->cap) {
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + n) cap *= 2;
    unsigned char *q = realloc(b->p, cap);
    if (!q) {
      b->oom = 1;
      return;
    }
    b->p = q;
    b->cap = cap;
  }
  memcpy(b->p + b->len, data, n);
  b->len += n;
}

static void buf_str(buf *b, const char *s) { buf_put(b, s, strlen(s)); }

/* Only integers and strings go through here, so the locale cannot change the output. */
static void cbuf_printf(buf *b, const char *fmt, ...) {
  char tmp[256];
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (k < 0) return;
  buf_put(b, tmp, (size_t)k < sizeof tmp ? (size_t)k : sizeof tmp - 1);
}

/* ---- text: UTF-8 walking, clipping, number formatting -------------------------------------- */

/* Length of the valid UTF-8 sequence of 2..4 bytes starting at p, or 0 (also 0 for U+FFFE and
 * U+FFFF, which XML does not allow). */
static int utf8_seq(const unsigned char *p) {
  unsigned c = p[0];
  if (c >= 0xC2 && c <= 0xDF) return (p[1] & 0xC0) == 0x80 ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    unsigned lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
    if (p[1] < lo || p[1] > hi || (p[2] & 0xC0) != 0x80) return 0;
    if (c == 0xEF && p[1] == 0xBF && (p[2] == 0xBE || p[2] == 0xBF)) return 0;
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    unsigned lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
    if (p[1] < lo || p[1] > hi || (p[2] & 0xC0) != 0x80 || (p[3] & 0xC0) != 0x80) return 0;
    return 4;
  }
  return 0;
}

/* Bytes of the next glyph of s (a printable ASCII byte, a valid UTF-8 sequence, or one other
 * byte that is drawn as '?'); *ascii gets the character the bitmap font draws for it. */
static int next_glyph(const unsigned char *s, char *ascii) {
  if (s[0] >= 0x20 && s[0] < 0x7F) {
    *ascii = (char)s[0];
    return 1;
  }
  *ascii = '?';
  int k = s[0] >= 0x80 ? utf8_seq(s) : 0;
  return k ? k : 1;
}

static int glyph_count(const char *s) {
  int n = 0;
  char a;
  for (const unsigned char *p = (const unsigned char *)s; *p; p += next_glyph(p, &a)) ++n;
  return n;
}

/* Copies at most maxg glyphs of src to dst (size cap); a cut text ends with '~'. */
static void clip_text(const char *src, int maxg, char *dst, size_t cap) {
  const unsigned char *p = (const unsigned char *)src;
  int total = glyph_count(src);
  int keep = total <= maxg ? total : maxg - 1;
  size_t o = 0;
  char a;
  for (int g = 0; g < keep && *p; ++g) {
    int k = next_glyph(p, &a);
    if (o + (size_t)k + 2 > cap) break;
    memcpy(dst + o, p, (size_t)k);
    o += (size_t)k;
    p += k;
  }
  if (keep < total && maxg > 0 && o + 2 <= cap) dst[o++] = '~';
  dst[o] = '\0';
}

/* Writes the integer mant * 10^e (|mant| < 10^15) as text: fixed notation, or "d.ddde-7" style
 * when sci; built from integer digits only (locale-independent, exact). */
static void fmt_scaled(long long mant, int e, int sci, char *out, size_t cap) {
  char dig[32];
  int neg = mant < 0;
  unsigned long long m = (unsigned long long)(neg ? -mant : mant);
  snprintf(dig, sizeof dig, "%llu", m);
  int nd = (int)strlen(dig);
  if (m == 0) {
    snprintf(out, cap, "0");
    return;
  }
  if (sci) {
    int exp10 = e + nd - 1;
    int last = nd; /* strip trailing zeros of the mantissa */
    while (last > 1 && dig[last - 1] == '0') --last;
    snprintf(out, cap, "%s%c%s%.*s" "e%d", neg ? "-" : "", dig[0], last > 1 ? "." : "", last - 1,
             dig + 1, exp10);
  } else if (e >= 0) {
    snprintf(out, cap, "%s%s%.*s", neg ? "-" : "", dig, e, "000000000000000000000000");
  } else {
    int frac = -e;
    if (nd > frac) {
      snprintf(out, cap, "%s%.*s.%s", neg ? "-" : "", nd - frac, dig, dig + nd - frac);
    } else {
      snprintf(out, cap, "%s0.%.*s%s", neg ? "-" : "", frac - nd, "000000000000000000000000",
               dig);
    }
  }
}

/* v / 10^e without overflowing 10^e below the normal range (subnormal v). */
static double scale_down(double v, int e) {
  return e >= -290 ? v / pow(10.0, e) : (v * 1e200) / pow(10.0, e + 200);
}

/* v with about 5 significant digits, trailing zeros dropped (for tooltips). */
static void fmt_value(double v, char *out, size_t cap) {
  if (v == 0) {
    snprintf(out, cap, "0");
    return;
  }
  int e10 = (int)floor(log10(fabs(v)));
  int e = e10 - 4;
  long long mant = llround(scale_down(v, e));
  if (llabs(mant) >= 100000) { /* rounding carried into a new digit */
    mant = llround(scale_down(v, e + 1));
    ++e;
    ++e10;
  }
  while (mant != 0 && mant % 10 == 0 && e < 0) {
    mant /= 10;
    ++e;
  }
  fmt_scaled(mant, e, e10 >= 6 || e10 < -4, out, cap);
}

/* ---- the font: printable ASCII 32..126, 5 columns x 8 rows ('#' = ink), row 7 = descenders -- */

static const char k_font[95][41] = {
    /* ' ' */ "....." "....." "....." "....." "....." "....." "....." ".....",
    /* '!' */ "..#.." "..#.." "..#.." "..#.." "..#.." "....." "..#.." ".....",
    /* '"' */ ".#.#." ".#.#." "....." "....." "....." "....." "....." ".....",
    /* '#' */ ".#.#." ".#.#." "#####" ".#.#." "#####" ".#.#." ".#.#." ".....",
    /* '$' */ "..#.." ".####" "#.#.." ".###." "..#.#" "####." "..#.." ".....",
    /* '%' */ "##..." "##..#" "...#." "..#.." ".#..." "#..##" "...##" ".....",
    /* '&' */ ".##.." "#..#." "#.#.." ".#..." "#.#.#" "#..#." ".##.#" ".....",
    /* ''' */ "..#.." "..#.." ".#..." "....." "....." "....." "....." ".....",
    /* '(' */ "...#." "..#.." ".#..." ".#..." ".#..." "..#.." "...#." ".....",
    /* ')' */ ".#..." "..#.." "...#." "...#." "...#." "..#.." ".#..." ".....",
    /* '*' */ "....." "..#.." "#.#.#" ".###." "#.#.#" "..#.." "....." ".....",
    /* '+' */ "....." "..#.." "..#.." "#####" "..#.." "..#.." "....." ".....",
    /* ',' */ "....." "....." "....." "....." "....." ".##.." "..#.." ".#...",
    /* '-' */ "....." "....." "....." "#####" "....." "....." "....." ".....",
    /* '.' */ "....." "....." "....." "....." "....." ".##.." ".##.." ".....",
    /* '/' */ "....#" "....#" "...#." "..#.." ".#..." "#...." "#...." ".....",
    /* '0' */ ".###." "#...#" "#..##" "#.#.#" "##..#" "#...#" ".###." ".....",
    /* '1' */ "..#.." ".##.." "..#.." "..#.." "..#.." "..#.." ".###." ".....",
    /* '2' */ ".###." "#...#" "....#" "...#." "..#.." ".#..." "#####" ".....",
    /* '3' */ "#####" "...#." "..#.." "...#." "....#" "#...#" ".###." ".....",
    /* '4' */ "...#." "..##." ".#.#." "#..#." "#####" "...#." "...#." ".....",
    /* '5' */ "#####" "#...." "####." "....#" "....#" "#...#" ".###." ".....",
    /* '6' */ "..##." ".#..." "#...." "####." "#...#" "#...#" ".###." ".....",
    /* '7' */ "#####" "....#" "...#." "..#.." ".#..." ".#..." ".#..." ".....",
    /* '8' */ ".###." "#...#" "#...#" ".###." "#...#" "#...#" ".###." ".....",
    /* '9' */ ".###." "#...#" "#...#" ".####" "....#" "...#." ".##.." ".....",
    /* ':' */ "....." ".##.." ".##.." "....." ".##.." ".##.." "....." ".....",
    /* ';' */ "....." ".##.." ".##.." "....." ".##.." "..#.." ".#..." ".....",
    /* '<' */ "...#." "..#.." ".#..." "#...." ".#..." "..#.." "...#." ".....",
    /* '=' */ "....." "....." "#####" "....." "#####" "....." "....." ".....",
    /* '>' */ ".#..." "..#.." "...#." "....#" "...#." "..#.." ".#..." ".....",
    /* '?' */ ".###." "#...#" "....#" "...#." "..#.." "....." "..#.." ".....",
    /* '@' */ ".###." "#...#" "....#" ".##.#" "#.#.#" "#.#.#" ".###." ".....",
    /* 'A' */ ".###." "#...#" "#...#" "#####" "#...#" "#...#" "#...#" ".....",
    /* 'B' */ "####." "#...#" "#...#" "####." "#...#" "#...#" "####." ".....",
    /* 'C' */ ".###." "#...#" "#...." "#...." "#...." "#...#" ".###." ".....",
    /* 'D' */ "###.." "#..#." "#...#" "#...#" "#...#" "#..#." "###.." ".....",
    /* 'E' */ "#####" "#...." "#...." "####." "#...." "#...." "#####" ".....",
    /* 'F' */ "#####" "#...." "#...." "####." "#...." "#...." "#...." ".....",
    /* 'G' */ ".###." "#...#" "#...." "#.###" "#...#" "#...#" ".####" ".....",
    /* 'H' */ "#...#" "#...#" "#...#" "#####" "#...#" "#...#" "#...#" ".....",
    /* 'I' */ ".###." "..#.." "..#.." "..#.." "..#.." "..#.." ".###." ".....",
    /* 'J' */ "..###" "...#." "...#." "...#." "...#." "#..#." ".##.." ".....",
    /* 'K' */ "#...#" "#..#." "#.#.." "##..." "#.#.." "#..#." "#...#" ".....",
    /* 'L' */ "#...." "#...." "#...." "#...." "#...." "#...." "#####" ".....",
    /* 'M' */ "#...#" "##.##" "#.#.#" "#.#.#" "#...#" "#...#" "#...#" ".....",
    /* 'N' */ "#...#" "#...#" "##..#" "#.#.#" "#..##" "#...#" "#...#" ".....",
    /* 'O' */ ".###." "#...#" "#...#" "#...#" "#...#" "#...#" ".###." ".....",
    /* 'P' */ "####." "#...#" "#...#" "####." "#...." "#...." "#...." ".....",
    /* 'Q' */ ".###." "#...#" "#...#" "#...#" "#.#.#" "#..#." ".##.#" ".....",
    /* 'R' */ "####." "#...#" "#...#" "####." "#.#.." "#..#." "#...#" ".....",
    /* 'S' */ ".####" "#...." "#...." ".###." "....#" "....#" "####." ".....",
    /* 'T' */ "#####" "..#.." "..#.." "..#.." "..#.." "..#.." "..#.." ".....",
    /* 'U' */ "#...#" "#...#" "#...#" "#...#" "#...#" "#...#" ".###." ".....",
    /* 'V' */ "#...#" "#...#" "#...#" "#...#" "#...#" ".#.#." "..#.." ".....",
    /* 'W' */ "#...#" "#...#" "#...#" "#.#.#" "#.#.#" "#.#.#" ".#.#." ".....",
    /* 'X' */ "#...#" "#...#" ".#.#." "..#.." ".#.#." "#...#" "#...#" ".....",
    /* 'Y' */ "#...#" "#...#" ".#.#." "..#.." "..#.." "..#.." "..#.." ".....",
    /* 'Z' */ "#####" "....#" "...#." "..#.." ".#..." "#...." "#####" ".....",
    /* '[' */ ".###." ".#..." ".#..." ".#..." ".#..." ".#..." ".###." ".....",
    /* '\' */ "#...." "#...." ".#..." "..#.." "...#." "....#" "....#" ".....",
    /* ']' */ ".###." "...#." "...#." "...#." "...#." "...#." ".###." ".....",
    /* '^' */ "..#.." ".#.#." "#...#" "....." "....." "....." "....." ".....",
    /* '_' */ "....." "....." "....." "....." "....." "....." "....." "#####",
    /* '`' */ ".#..." "..#.." "...#." "....." "....." "....." "....." ".....",
    /* 'a' */ "....." "....." ".###." "....#" ".####" "#...#" ".####" ".....",
    /* 'b' */ "#...." "#...." "####." "#...#" "#...#" "#...#" "####." ".....",
    /* 'c' */ "....." "....." ".###." "#...." "#...." "#...#" ".###." ".....",
    /* 'd' */ "....#" "....#" ".####" "#...#" "#...#" "#...#" ".####" ".....",
    /* 'e' */ "....." "....." ".###." "#...#" "#####" "#...." ".###." ".....",
    /* 'f' */ "..##." ".#..#" ".#..." "###.." ".#..." ".#..." ".#..." ".....",
    /* 'g' */ "....." "....." ".####" "#...#" "#...#" ".####" "....#" ".###.",
    /* 'h' */ "#...." "#...." "#.##." "##..#" "#...#" "#...#" "#...#" ".....",
    /* 'i' */ "..#.." "....." ".##.." "..#.." "..#.." "..#.." ".###." ".....",
    /* 'j' */ "...#." "....." "..##." "...#." "...#." "...#." "#..#." ".##..",
    /* 'k' */ "#...." "#...." "#..#." "#.#.." "##..." "#.#.." "#..#." ".....",
    /* 'l' */ ".##.." "..#.." "..#.." "..#.." "..#.." "..#.." ".###." ".....",
    /* 'm' */ "....." "....." "##.#." "#.#.#" "#.#.#" "#.#.#" "#.#.#" ".....",
    /* 'n' */ "....." "....." "#.##." "##..#" "#...#" "#...#" "#...#" ".....",
    /* 'o' */ "....." "....." ".###." "#...#" "#...#" "#...#" ".###." ".....",
    /* 'p' */ "....." "....." "####." "#...#" "#...#" "####." "#...." "#....",
    /* 'q' */ "....." "....." ".####" "#...#" "#...#" ".####" "....#" "....#",
    /* 'r' */ "....." "....." "#.##." "##..#" "#...." "#...." "#...." ".....",
    /* 's' */ "....." "....." ".####" "#...." ".###." "....#" "####." ".....",
    /* 't' */ ".#..." ".#..." "###.." ".#..." ".#..." ".#..#" "..##." ".....",
    /* 'u' */ "....." "....." "#...#" "#...#" "#...#" "#..##" ".##.#" ".....",
    /* 'v' */ "....." "....." "#...#" "#...#" "#...#" ".#.#." "..#.." ".....",
    /* 'w' */ "....." "....." "#...#" "#...#" "#.#.#" "#.#.#" ".#.#." ".....",
    /* 'x' */ "....." "....." "#...#" ".#.#." "..#.." ".#.#." "#...#" ".....",
    /* 'y' */ "....." "....." "#...#" "#...#" "#...#" ".####" "....#" ".###.",
    /* 'z' */ "....." "....." "#####" "...#." "..#.." ".#..." "#####" ".....",
    /* '{' */ "...#." "..#.." "..#.." ".#..." "..#.." "..#.." "...#." ".....",
    /* '|' */ "..#.." "..#.." "..#.." "..#.." "..#.." "..#.." "..#.." ".....",
    /* '}' */ ".#..." "..#.." "..#.." "...#." "..#.." "..#.." ".#..." ".....",
    /* '~' */ "....." "....." ".#..." "#.#.#" "...#." "....." "....." ".....",
};

enum { GLYPH_W = 5, GLYPH_H = 8, CELL_W = 6, CELL_H = 10, CAP_H = 7 };

/* ---- colours: the PNG palette and the SVG fills ------------------------------------------- */

enum { C_BG, C_FG, C_GRID, C_MINOR, C_SUB, C_RING, C_SERIES, N_COLOURS = C_SERIES + 8 };
static const unsigned char k_pal[N_COLOURS][3] = {
    {0xff, 0xff, 0xff}, /* background */
    {0x22, 0x22, 0x22}, /* frame, ticks, titles */
    {0xd4, 0xd4, 0xd4}, /* major grid, legend box */
    {0xee, 0xee, 0xee}, /* minor grid (log axes) */
    {0x55, 0x55, 0x55}, /* labels of Pareto points, the legend's Pareto sample */
    {0x00, 0x00, 0x00}, /* ring of the chosen point */
    {0x1f, 0x6f, 0xc5}, /* series 0: blue */
    {0xe0, 0x62, 0x1a}, /* series 1: orange */
    {0x2e, 0x9d, 0x4a}, /* series 2: green */
    {0xb0, 0x2b, 0x3a}, /* series 3: crimson */
    {0x8a, 0x4f, 0xc9}, /* series 4: violet */
    {0x12, 0x9c, 0xa8}, /* series 5: teal */
    {0xd1, 0x9a, 0x00}, /* series 6: ochre */
    {0xd9, 0x4f, 0xa8}, /* series 7: pink */
};

/* ---- the canvas: SVG elements or palette pixels ------------------------------------------- */

typedef struct {
  int svg;
  int w, h;
  buf out;           /* SVG text */
  unsigned char *px; /* PNG: one palette index per pixel, row-major */
} canvas;

enum { A_START, A_MIDDLE, A_END };

static void svg_colour(canvas *c, const char *attr, int col) {
  cbuf_printf(&c->out, " %s=\"#%02x%02x%02x\"", attr, k_pal[col][0], k_pal[col][1], k_pal[col][2]);
}

/* A coordinate in half units (the SVG position of a pixel centre is its index + 0.5). */
static void svg_half(canvas *c, const char *attr, long halves) {
  cbuf_printf(&c->out, " %s=\"%ld%s\"", attr, halves / 2, halves % 2 ? ".5" : "");
}

/* XML text of s (esc_xml: entities; valid UTF-8 kept; control characters and invalid bytes as
 * '?'). */
static void svg_escaped(canvas *c, const char *s) {
  hot_buf x = {0};
  esc_xml(&x, s);
  if (buf_ok(&x) && x.len) buf_put(&c->out, x.data, x.len);
  else if (!buf_ok(&x)) c->out.oom = 1;
  buf_free(&x);
}

static void px_set(canvas *c, int x, int y, int col) {
  if (x >= 0 && y >= 0 && x < c->w && y < c->h)
    c->px[(size_t)y * (size_t)c->w + (size_t)x] = (unsigned char)col;
}

static void px_brush(canvas *c, int x, int y, int t, int col) {
  int o = (t - 1) / 2;
  for (int dy = 0; dy < t; ++dy)
    for (int dx = 0; dx < t; ++dx) px_set(c, x - o + dx, y - o + dy, col);
}

/* Fills the pixels x..x+w-1, y..y+h-1. */
static void cv_fill(canvas *c, int x, int y, int w, int h, int col) {
  if (c->svg) {
    cbuf_printf(&c->out, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"", x, y, w, h);
    svg_colour(c, "fill", col);
    buf_str(&c->out, "/>\n");
    return;
  }
  for (int j = y; j < y + h; ++j)
    for (int i = x; i < x + w; ++i) px_set(c, i, j, col);
}

/* A line between two pixel centres, t pixels thick (Bresenham with a square brush). */
static void cv_line(canvas *c, int x0, int y0, int x1, int y1, int t, int col) {
  if (c->svg) {
    buf_str(&c->out, "<line");
    svg_half(c, "x1", 2L * x0 + 1);
    svg_half(c, "y1", 2L * y0 + 1);
    svg_half(c, "x2", 2L * x1 + 1);
    svg_half(c, "y2", 2L * y1 + 1);
    svg_colour(c, "stroke", col);
    cbuf_printf(&c->out, " stroke-width=\"%d\" stroke-linecap=\"square\"/>\n", t);
    return;
  }
  int dx = abs(x1 - x0), dy = -abs(y1 - y0);
  int sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1;
  int e = dx + dy;
  for (;;) {
    px_brush(c, x0, y0, t, col);
    if (x0 == x1 && y0 == y1) break;
    int e2 = 2 * e;
    if (e2 >= dy) {
      e += dy;
      x0 += sx;
    }
    if (e2 <= dx) {
      e += dx;
      y0 += sy;
    }
  }
}

/* The outline of the pixel rectangle x0..x1, y0..y1 (1 pixel). */
static void cv_frame(canvas *c, int x0, int y0, int x1, int y1, int col) {
  if (c->svg) {
    buf_str(&c->out, "<rect");
    svg_half(c, "x", 2L * x0 + 1);
    svg_half(c, "y", 2L * y0 + 1);
    cbuf_printf(&c->out, " width=\"%d\" height=\"%d\" fill=\"none\"", x1 - x0, y1 - y0);
    svg_colour(c, "stroke", col);
    buf_str(&c->out, " stroke-width=\"1\"/>\n");
    return;
  }
  cv_line(c, x0, y0, x1, y0, 1, col);
  cv_line(c, x1, y0, x1, y1, 1, col);
  cv_line(c, x1, y1, x0, y1, 1, col);
  cv_line(c, x0, y1, x0, y0, 1, col);
}

/* A polyline through n pixel centres xy[2i], xy[2i+1]; cls: its SVG class. */
static void cv_polyline(canvas *c, const int *xy, int n, int t, int col, const char *cls) {
  if (n < 2) return;
  if (c->svg) {
    cbuf_printf(&c->out, "<polyline class=\"%s\" points=\"", cls);
    for (int i = 0; i < n; ++i) {
      long hx = 2L * xy[2 * i] + 1, hy = 2L * xy[2 * i + 1] + 1;
      cbuf_printf(&c->out, "%s%ld%s,%ld%s", i ? " " : "", hx / 2, hx % 2 ? ".5" : "", hy / 2,
                 hy % 2 ? ".5" : "");
    }
    buf_str(&c->out, "\" fill=\"none\"");
    svg_colour(c, "stroke", col);
    cbuf_printf(&c->out, " stroke-width=\"%d\" stroke-linejoin=\"miter\"/>\n", t);
    return;
  }
  for (int i = 0; i + 1 < n; ++i)
    cv_line(c, xy[2 * i], xy[2 * i + 1], xy[2 * i + 2], xy[2 * i + 3], t, col);
}

/* A filled disc: the pixels with dx^2 + dy^2 <= r^2 + r (radius r + 1/2 in the SVG). cls and
 * tip (a tooltip) are SVG-only and may be NULL. */
static void cv_disc(canvas *c, int cx, int cy, int r, int col, const char *cls, const char *tip) {
  if (c->svg) {
    buf_str(&c->out, "<circle");
    if (cls) cbuf_printf(&c->out, " class=\"%s\"", cls);
    svg_half(c, "cx", 2L * cx + 1);
    svg_half(c, "cy", 2L * cy + 1);
    svg_half(c, "r", 2L * r + 1);
    svg_colour(c, "fill", col);
    if (tip) {
      buf_str(&c->out, "><title>");
      svg_escaped(c, tip);
      buf_str(&c->out, "</title></circle>\n");
    } else {
      buf_str(&c->out, "/>\n");
    }
    return;
  }
  for (int dy = -r; dy <= r; ++dy)
    for (int dx = -r; dx <= r; ++dx)
      if (dx * dx + dy * dy <= r * r + r) px_set(c, cx + dx, cy + dy, col);
}

/* A ring of outer radius r and thickness t (the pixels between the discs of r - t and r). */
static void cv_ring(canvas *c, int cx, int cy, int r, int t, int col, const char *cls) {
  if (c->svg) {
    buf_str(&c->out, "<circle");
    if (cls) cbuf_printf(&c->out, " class=\"%s\"", cls);
    svg_half(c, "cx", 2L * cx + 1);
    svg_half(c, "cy", 2L * cy + 1);
    svg_half(c, "r", 2L * r + 1 - t); /* the middle of the band r - t + 1/2 .. r + 1/2 */
    buf_str(&c->out, " fill=\"none\"");
    svg_colour(c, "stroke", col);
    cbuf_printf(&c->out, " stroke-width=\"%d\"/>\n", t);
    return;
  }
  int ri = r - t;
  for (int dy = -r; dy <= r; ++dy)
    for (int dx = -r; dx <= r; ++dx) {
      int d2 = dx * dx + dy * dy;
      if (d2 <= r * r + r && (ri < 0 || d2 > ri * ri + ri)) px_set(c, cx + dx, cy + dy, col);
    }
}

/* Text of scale sc (cells of 6sc x 10sc, glyph body 7sc above the baseline); x is the anchor
 * point (left edge, centre or right edge), top the top of the glyph cells. */
static void cv_text(canvas *c, int x, int top, int anchor, int sc, int col, const char *cls,
                    const char *s) {
  int w = glyph_count(s) * CELL_W * sc - sc; /* no spacing after the last glyph */
  if (w <= 0) return;
  if (c->svg) {
    buf_str(&c->out, "<text");
    if (cls) cbuf_printf(&c->out, " class=\"%s\"", cls);
    cbuf_printf(&c->out, " x=\"%d\" y=\"%d\" font-size=\"%d\"",
               anchor == A_START ? x : anchor == A_MIDDLE ? x : x + 1, top + CAP_H * sc,
               CELL_H * sc);
    if (anchor != A_START)
      cbuf_printf(&c->out, " text-anchor=\"%s\"", anchor == A_MIDDLE ? "middle" : "end");
    svg_colour(c, "fill", col);
    buf_str(&c->out, ">");
    svg_escaped(c, s);
    buf_str(&c->out, "</text>\n");
    return;
  }
  int left = anchor == A_START ? x : anchor == A_MIDDLE ? x - w / 2 : x - w + 1;
  const unsigned char *p = (const unsigned char *)s;
  for (int g = 0; *p; ++g) {
    char a;
    p += next_glyph(p, &a);
    const char *bits = k_font[(unsigned char)a - 32];
    for (int r = 0; r < GLYPH_H; ++r)
      for (int q = 0; q < GLYPH_W; ++q)
        if (bits[r * GLYPH_W + q] == '#')
          for (int yy = 0; yy < sc; ++yy)
            for (int xx = 0; xx < sc; ++xx)
              px_set(c, left + (g * CELL_W + q) * sc + xx, top + r * sc + yy, col);
  }
}

static int text_w(const char *s, int sc) { return glyph_count(s) * CELL_W * sc - sc; }

/* ---- axes: ranges, nice ticks, labels ----------------------------------------------------- */

#define MAX_TICKS 64
typedef struct {
  int log;
  double lo, hi;          /* the axis limits (data units) */
  double tick[MAX_TICKS]; /* labelled ticks (data units), ascending */
  char lab[MAX_TICKS][32];
  int nt;
  double minor[MAX_TICKS * 8]; /* unlabelled grid lines (log axes: 2..9 x 10^k) */
  int nminor;
  int p0, p1; /* pixels of lo and hi */
} axis;

static double ax_t(const axis *a, double v) {
  if (a->log) return (log10(v) - log10(a->lo)) / (log10(a->hi) - log10(a->lo));
  return (v - a->lo) / (a->hi - a->lo);
}

/* The pixel of v (clamped far outside the image, so a value off the axis cannot overflow). */
static int ax_px(const axis *a, double v) {
  double p = floor(a->p0 + ax_t(a, v) * (a->p1 - a->p0) + 0.5);
  return p < -100000 ? -100000 : p > 100000 ? 100000 : (int)p;
}

/* Linear ticks on [dlo, dhi] (data range): step m * 10^e with m in {1, 2, 5} so that about
 * target intervals cover the range; limits on multiples of the step. */
static void ticks_linear(axis *a, double dlo, double dhi, int target) {
  double span = dhi - dlo;
  if (span <= fabs(dlo) * 1e-9 || span <= 0) { /* one value (or nearly): a window around it */
    double mid = 0.5 * (dlo + dhi), d = mid == 0 ? 1 : fabs(mid) * 0.1;
    dlo = mid - d;
    dhi = mid + d;
  } else { /* 4% margins, not crossing zero (errors and times are not negative) */
    double pad = span * 0.04;
    dlo = dlo >= 0 && dlo - pad < 0 ? 0 : dlo - pad;
    dhi = dhi <= 0 && dhi + pad > 0 ? 0 : dhi + pad;
  }
  double raw = (dhi - dlo) / target;
  int e = (int)floor(log10(raw));
  double f = raw / pow(10.0, e);
  int m = f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10;
  if (m == 10) {
    m = 1;
    ++e;
  }
  double step = m * pow(10.0, e);
  long long k0 = (long long)floor(dlo / step + 1e-9), k1 = (long long)ceil(dhi / step - 1e-9);
  if (k1 <= k0) k1 = k0 + 1;
  a->lo = (double)k0 * step;
  a->hi = (double)k1 * step;
  double maxabs = fmax(fabs(a->lo), fabs(a->hi));
  int sci = maxabs >= 1e6 || e <= -5;
  a->nt = 0;
  for (long long k = k0; k <= k1 && a->nt < MAX_TICKS; ++k) {
    a->tick[a->nt] = (double)k * step;
    fmt_scaled(k * m, e, sci, a->lab[a->nt], sizeof a->lab[0]);
    ++a->nt;
  }
  a->nminor = 0;
}

/* Log ticks on [dlo, dhi] (both > 0): decades (every 2nd, 5th, 10th... decade when there are
 * more than target), 2 and 5 labelled when the axis spans one decade, 2..9 as unlabelled grid
 * lines when it spans at most 6. */
static void ticks_log(axis *a, double dlo, double dhi, int target) {
  int d0 = (int)floor(log10(dlo) + 1e-9), d1 = (int)ceil(log10(dhi) - 1e-9);
  if (d1 <= d0) d1 = d0 + 1;
  static const int strides[] = {1, 2, 5, 10, 20, 50, 100, 200};
  int stride = 1;
  for (int i = 0; i < 8; ++i) { /* decades on multiples of a 1-2-5 stride */
    stride = strides[i];
    int lo = (int)floor((double)d0 / stride) * stride, hi = (int)ceil((double)d1 / stride) * stride;
    if ((hi - lo) / stride <= target || i == 7) {
      d0 = lo < -320 ? -320 : lo; /* 10^d stays above zero and finite */
      d1 = hi > 308 ? 308 : hi;
      break;
    }
  }
  a->lo = pow(10.0, d0);
  a->hi = pow(10.0, d1);
  a->nt = 0;
  a->nminor = 0;
  for (int d = d0; d <= d1 && a->nt < MAX_TICKS; d += stride) {
    static const int one_decade[3] = {1, 2, 5};
    for (int i = 0; i < (d1 - d0 == 1 && d < d1 ? 3 : 1); ++i) {
      int mm = one_decade[i];
      a->tick[a->nt] = mm * pow(10.0, d);
      fmt_scaled(mm, d, d >= 5 || d <= -4, a->lab[a->nt], sizeof a->lab[0]);
      ++a->nt;
    }
    if (stride == 1 && d1 - d0 <= 6 && d < d1)
      for (int mm = 2; mm <= 9; ++mm)
        if (!(d1 - d0 == 1 && (mm == 2 || mm == 5))) a->minor[a->nminor++] = mm * pow(10.0, d);
  }
}

static void make_ticks(axis *a, double dlo, double dhi, int target) {
  if (a->log)
    ticks_log(a, dlo, dhi, target);
  else
    ticks_linear(a, dlo, dhi, target);
}

/* Widest tick label, in pixels at scale sc. */
static int widest_label(const axis *a, int sc) {
  int w = 0;
  for (int i = 0; i < a->nt; ++i) {
    int k = text_w(a->lab[i], sc);
    if (k > w) w = k;
  }
  return w;
}

/* Smallest pixel distance between neighbouring ticks. */
static int min_gap(const axis *a) {
  int g = 1 << 30;
  for (int i = 0; i + 1 < a->nt; ++i) {
    int d = abs(ax_px(a, a->tick[i + 1]) - ax_px(a, a->tick[i]));
    if (d < g) g = d;
  }
  return g;
}

/* ---- the plot ----------------------------------------------------------------------------- */

typedef struct {
  int x0, y0, x1, y1;
} box;

static int boxes_overlap(const box *a, const box *b) {
  return a->x0 <= b->x1 && b->x0 <= a->x1 && a->y0 <= b->y1 && b->y0 <= a->y1;
}

static int finite_pt(const hot_plot_point *p) { return isfinite(p->x) && isfinite(p->y); }

/* Order of the Pareto step line: by x, then from the higher error down; ties by index. */
static int before(const hot_plot_point *pts, int ia, int ib) {
  const hot_plot_point *a = &pts[ia], *b = &pts[ib];
  if (a->x != b->x) return a->x < b->x;
  if (a->y != b->y) return a->y > b->y;
  return ia < ib;
}

/* Sorts idx[0..n-1] (point indices) with before(); tmp has room for n indices (merge sort). */
static void sort_by_x(int *idx, int *tmp, int n, const hot_plot_point *pts) {
  for (int w = 1; w < n; w *= 2) {
    for (int lo = 0; lo < n; lo += 2 * w) {
      int mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
      int i = lo, j = mid, k = lo;
      while (i < mid && j < hi) tmp[k++] = before(pts, idx[j], idx[i]) ? idx[j++] : idx[i++];
      while (i < mid) tmp[k++] = idx[i++];
      while (j < hi) tmp[k++] = idx[j++];
    }
    memcpy(idx, tmp, sizeof *idx * (size_t)n);
  }
}

typedef struct {
  int W, H, s;             /* size, text scale */
  int pad, tick, cw, lh;   /* margins, tick length, cell width, line height (scale s) */
  int px0, px1, py0, py1;  /* plot area (pixels, inclusive); py0 top, py1 bottom */
  int r_pt, r_dom, r_ring; /* marker radii: Pareto / chosen, dominated, ring */
  axis ax, ay;
  int legend_rows, legend_w, legend_chars, name_chars;
  int has_pareto, has_chosen;
} layout;

/* The legend entry text of series i. */
static void series_name(const hot_plot_opts *o, int i, char *out, size_t cap, int maxg) {
  char tmp[32];
  const char *nm = o && o->series_names[i] ? o->series_names[i] : NULL;
  if (!nm) {
    snprintf(tmp, sizeof tmp, "series %d", i);
    nm = tmp;
  }
  clip_text(nm, maxg, out, cap);
}

/* The legend's size: series names (at most a fifth of the width), then the Pareto and chosen
 * samples. */
static void legend_layout(layout *L, const hot_plot_opts *o) {
  int cap = L->W / (5 * L->cw);
  L->name_chars = cap < 6 ? 6 : cap > 20 ? 20 : cap;
  L->legend_chars = 0;
  L->legend_rows = 0;
  int nser = o ? o->n_series : 0;
  for (int i = 0; i < nser; ++i) {
    char nm[128];
    series_name(o, i, nm, sizeof nm, L->name_chars);
    int g = glyph_count(nm);
    if (g > L->legend_chars) L->legend_chars = g;
    ++L->legend_rows;
  }
  if (L->has_pareto) {
    L->legend_rows++;
    if (L->legend_chars < 12) L->legend_chars = 12; /* "Pareto front" */
  }
  if (L->has_chosen) {
    L->legend_rows++;
    if (L->legend_chars < 6) L->legend_chars = 6;
  }
  L->legend_w = L->legend_rows ? 2 * L->pad + 4 * L->cw + L->legend_chars * L->cw : 0;
}

/* The scale and the sizes that follow from it. */
static void scale_layout(layout *L) {
  int s = (L->W < L->H * 8 / 5 ? L->W : L->H * 8 / 5) / 480;
  L->s = s = s < 1 ? 1 : s > 8 ? 8 : s;
  L->pad = 6 * s;
  L->tick = 3 * s;
  L->cw = CELL_W * s;
  L->lh = CELL_H * s;
  L->r_pt = 2 * s + 1;
  L->r_dom = 2 * s;
  L->r_ring = L->r_pt + 2 * s + 1;
}

/* The x ticks: fewer until the labels fit between them; the plot area narrows while the first or
 * last label (centred on its tick) would leave the image. */
static void x_ticks(layout *L, double xlo, double xhi) {
  const int s = L->s;
  for (int round = 0; round < 4; ++round) {
    L->ax.p0 = L->px0;
    L->ax.p1 = L->px1;
    int tx = (L->px1 - L->px0) / (50 * s);
    for (tx = tx < 2 ? 2 : tx > 12 ? 12 : tx;; --tx) {
      make_ticks(&L->ax, xlo, xhi, tx);
      if (tx <= 1 || min_gap(&L->ax) >= widest_label(&L->ax, s) + 2 * L->cw) break;
    }
    int over_l = L->pad / 2 - (L->px0 - text_w(L->ax.lab[0], s) / 2);
    int over_r = L->px1 + text_w(L->ax.lab[L->ax.nt - 1], s) / 2 + 1 - (L->W - L->pad / 2);
    if (over_l <= 0 && over_r <= 0) break;
    if (over_l > 0) L->px0 += over_l;
    if (over_r > 0) L->px1 -= over_r;
  }
}

/* The data's range over the finite points into lo[2] (x, y) and hi[2]; marks whether any point
 * is on a Pareto front or chosen. Returns 0, or -1 with a message (values too large). */
static int data_range(layout *L, const hot_plot_point *pts, int n, double lo[2], double hi[2],
                      char *err, size_t errlen) {
  lo[0] = lo[1] = INFINITY;
  hi[0] = hi[1] = -INFINITY;
  for (int i = 0; i < n; ++i) {
    if (!finite_pt(&pts[i])) continue;
    lo[0] = fmin(lo[0], pts[i].x);
    hi[0] = fmax(hi[0], pts[i].x);
    lo[1] = fmin(lo[1], pts[i].y);
    hi[1] = fmax(hi[1], pts[i].y);
    if (pts[i].pareto) L->has_pareto = 1;
    if (pts[i].chosen) L->has_chosen = 1;
  }
  if (fmax(fabs(lo[0]), fabs(hi[0])) > 1e300) {
    set_err(err, errlen, "plot: x values too large to draw (%g .. %g)", lo[0], hi[0]);
    return -1;
  }
  if (fmax(fabs(lo[1]), fabs(hi[1])) > 1e300) {
    set_err(err, errlen, "plot: y values too large to draw (%g .. %g)", lo[1], hi[1]);
    return -1;
  }
  return 0;
}

/* The title's scale: one step above the text's (s + 1), or s when the title would not fit the
 * width at s + 1 (then it is clipped only if it does not fit at s either). */
static int title_scale(int W, int s, const char *title) {
  int ts = s + 1;
  if (title && ts > s && glyph_count(title) > W / (CELL_W * ts) - 2) ts = s;
  return ts;
}

/* Computes the layout; returns 0 or -1 with a message. */
static int do_layout(layout *L, const hot_plot_point *pts, int n, const hot_plot_opts *o, char *err,
                     size_t errlen) {
  double lo[2], hi[2];
  if (data_range(L, pts, n, lo, hi, err, errlen) != 0) return -1;
  scale_layout(L);
  const int s = L->s;
  int bs = title_scale(L->W, s, o ? o->title : NULL); /* the title's scale */
  int has_title = o && o->title && *o->title, has_xl = o && o->x_label && *o->x_label;
  int has_yl = o && o->y_label && *o->y_label;
  legend_layout(L, o);

  int mt = L->pad + (has_title ? CELL_H * bs + L->pad / 2 : 0) +
           (has_yl ? GLYPH_H * s + L->pad / 2 : 0) + 4 * s;
  int mb = L->tick + 2 * s + L->lh + (has_xl ? L->pad / 2 + L->lh : 0) + L->pad;
  int mr = L->pad + 3 * L->cw + (L->legend_w ? L->legend_w + L->pad : 0);
  L->py0 = mt;
  L->py1 = L->H - 1 - mb;
  if (L->py1 - L->py0 < 60) {
    set_err(err, errlen, "plot: %d x %d is too small for the title and labels", L->W, L->H);
    return -1;
  }
  L->ay.p0 = L->py1;
  L->ay.p1 = L->py0;
  int ty = (L->py1 - L->py0) / (30 * s);
  make_ticks(&L->ay, lo[1], hi[1], ty < 2 ? 2 : ty > 12 ? 12 : ty);
  int ml = L->pad + widest_label(&L->ay, s) + 2 * s + L->tick;
  L->px0 = ml;
  L->px1 = L->W - 1 - mr;
  if (L->px1 - L->px0 < 60) {
    set_err(err, errlen, "plot: %d x %d is too narrow for the tick labels and the legend", L->W,
            L->H);
    return -1;
  }
  x_ticks(L, lo[0], hi[0]);
  if (L->px1 - L->px0 < 60) {
    set_err(err, errlen, "plot: %d x %d is too narrow for the tick labels and the legend", L->W,
            L->H);
    return -1;
  }
  return 0;
}

/* The text of a point's tooltip: "label: x=..., y=...". */
static void tooltip(const hot_plot_point *p, const hot_plot_opts *o, char *out, size_t cap) {
  char xs[40], ys[40];
  fmt_value(p->x, xs, sizeof xs);
  fmt_value(p->y, ys, sizeof ys);
  const char *xl = o && o->x_label && *o->x_label ? o->x_label : "x";
  const char *yl = o && o->y_label && *o->y_label ? o->y_label : "y";
  snprintf(out, cap, "%s%s%s = %s, %s = %s%s%s", p->label ? p->label : "", p->label ? ": " : "", xl,
           xs, yl, ys, p->pareto ? " (Pareto)" : "", p->chosen ? " (chosen)" : "");
}

/* The grid (minor, then major lines, inside the frame), the frame, the ticks and their labels. */
static void draw_axes(canvas *c, const layout *L) {
  const int s = L->s;
  const axis *ax = &L->ax, *ay = &L->ay;
  for (int i = 0; i < ax->nminor; ++i) {
    int x = ax_px(ax, ax->minor[i]);
    if (x > L->px0 && x < L->px1) cv_line(c, x, L->py0 + 1, x, L->py1 - 1, 1, C_MINOR);
  }
  for (int i = 0; i < ay->nminor; ++i) {
    int y = ax_px(ay, ay->minor[i]);
    if (y > L->py0 && y < L->py1) cv_line(c, L->px0 + 1, y, L->px1 - 1, y, 1, C_MINOR);
  }
  for (int i = 0; i < ax->nt; ++i) {
    int x = ax_px(ax, ax->tick[i]);
    if (x > L->px0 && x < L->px1) cv_line(c, x, L->py0 + 1, x, L->py1 - 1, 1, C_GRID);
  }
  for (int i = 0; i < ay->nt; ++i) {
    int y = ax_px(ay, ay->tick[i]);
    if (y > L->py0 && y < L->py1) cv_line(c, L->px0 + 1, y, L->px1 - 1, y, 1, C_GRID);
  }
  cv_frame(c, L->px0, L->py0, L->px1, L->py1, C_FG);

  for (int i = 0; i < ax->nt; ++i) {
    int x = ax_px(ax, ax->tick[i]);
    cv_line(c, x, L->py1 + 1, x, L->py1 + L->tick, 1, C_FG);
    cv_text(c, x, L->py1 + L->tick + 2 * s, A_MIDDLE, s, C_FG, "xtick", ax->lab[i]);
  }
  for (int i = 0; i < ay->nt; ++i) {
    int y = ax_px(ay, ay->tick[i]);
    cv_line(c, L->px0 - L->tick, y, L->px0 - 1, y, 1, C_FG);
    cv_text(c, L->px0 - L->tick - 2 * s, y - (CAP_H * s) / 2, A_END, s, C_FG, "ytick", ay->lab[i]);
  }
}

/* The title and the axis labels, clipped to the width. */
static void draw_titles(canvas *c, const layout *L, const hot_plot_opts *o) {
  const int s = L->s;
  char txt[512];
  int maxg = L->W / L->cw - 2;
  if (o && o->x_label && *o->x_label) { /* centred under the plot area, kept inside the image */
    clip_text(o->x_label, maxg, txt, sizeof txt);
    int w = text_w(txt, s), x = (L->px0 + L->px1) / 2;
    if (x - w / 2 < L->pad) x = L->pad + w / 2;
    if (x - w / 2 + w > L->W - L->pad) x = L->W - L->pad - w + w / 2;
    cv_text(c, x, L->py1 + L->tick + 2 * s + L->lh + L->pad / 2, A_MIDDLE, s, C_FG, "xlabel", txt);
  }
  if (o && o->y_label && *o->y_label) {
    clip_text(o->y_label, maxg, txt, sizeof txt);
    cv_text(c, L->pad, L->py0 - 4 * s - L->pad / 2 - GLYPH_H * s, A_START, s, C_FG, "ylabel", txt);
  }
  if (o && o->title && *o->title) {
    int ts = title_scale(L->W, s, o->title);
    clip_text(o->title, L->W / (CELL_W * ts) - 2, txt, sizeof txt);
    cv_text(c, L->W / 2, L->pad, A_MIDDLE, ts, C_FG, "title", txt);
  }
}

/* The legend, right of the plot area (when it has rows). */
static void draw_legend(canvas *c, const layout *L, const hot_plot_opts *o) {
  if (!L->legend_rows) return;
  const int s = L->s;
  char txt[512];
  int bx = L->px1 + L->pad + 3 * L->cw, by = L->py0;
  int bh = 2 * L->pad + L->legend_rows * (L->lh + 2 * s) - 2 * s;
  cv_frame(c, bx, by, bx + L->legend_w - 1, by + bh - 1, C_GRID);
  int row = 0;
  int mx = bx + L->pad + (3 * L->cw) / 2, tx = bx + L->pad + 4 * L->cw;
  for (int i = 0; i < (o ? o->n_series : 0); ++i, ++row) {
    int top = by + L->pad + row * (L->lh + 2 * s);
    series_name(o, i, txt, sizeof txt, L->name_chars);
    cv_disc(c, mx, top + (CAP_H * s) / 2, L->r_pt, C_SERIES + i, "key", NULL);
    cv_text(c, tx, top, A_START, s, C_FG, "key", txt);
  }
  if (L->has_pareto) {
    int top = by + L->pad + row * (L->lh + 2 * s), y = top + (CAP_H * s) / 2;
    int x0 = bx + L->pad, x1 = bx + L->pad + 3 * L->cw - 2 * s, xm = (x0 + x1) / 2;
    int step[8] = {x0, y - 2 * s, xm, y - 2 * s, xm, y + 2 * s, x1, y + 2 * s};
    cv_polyline(c, step, 4, s, C_SUB, "key");
    cv_text(c, tx, top, A_START, s, C_FG, "key", "Pareto front");
    ++row;
  }
  if (L->has_chosen) {
    int top = by + L->pad + row * (L->lh + 2 * s);
    int rr = L->r_ring < (L->lh + s) / 2 ? L->r_ring : (L->lh + s) / 2;
    cv_ring(c, mx, top + (CAP_H * s) / 2, rr, s < 2 ? 2 : s, C_RING, "key");
    cv_text(c, tx, top, A_START, s, C_FG, "key", "chosen");
  }
}

/* The Pareto front of each series: a step line through its points sorted by x. idx: 2n ints,
 * xy: 4n + 4 ints of scratch. */
static void draw_fronts(canvas *c, const layout *L, const hot_plot_point *pts, int n, int *idx,
                        int *xy) {
  const axis *ax = &L->ax, *ay = &L->ay;
  for (int sr = 0; sr < HOT_PLOT_MAX_SERIES; ++sr) {
    int k = 0;
    for (int i = 0; i < n; ++i)
      if (finite_pt(&pts[i]) && pts[i].pareto && pts[i].series == sr) idx[k++] = i;
    if (k < 2) continue;
    sort_by_x(idx, idx + n, k, pts);
    int m = 0;
    for (int j = 0; j < k; ++j) {
      int x = ax_px(ax, pts[idx[j]].x), y = ax_px(ay, pts[idx[j]].y);
      if (j > 0) { /* horizontal to the new x at the previous error, then down to this one */
        int py = xy[2 * m - 1];
        if (x != xy[2 * m - 2]) {
          xy[2 * m] = x;
          xy[2 * m + 1] = py;
          ++m;
        }
      }
      if (m == 0 || xy[2 * m - 2] != x || xy[2 * m - 1] != y) {
        xy[2 * m] = x;
        xy[2 * m + 1] = y;
        ++m;
      }
    }
    cv_polyline(c, xy, m, L->s, C_SERIES + sr, "front");
  }
}

/* Where p's label goes: the first of the four places around the marker inside the plot area that
 * overlaps no label placed so far; for a chosen point the first place inside (or the first) when
 * every one overlaps. Returns the place's index into cand, or -1 (not drawn). */
static int label_place(const layout *L, const hot_plot_point *p, const char *txt,
                       const box *placed, int np, box cand[4]) {
  const int s = L->s;
  box area = {L->px0 + 1, L->py0 + 1, L->px1 - 1, L->py1 - 1};
  int cx = ax_px(&L->ax, p->x), cy = ax_px(&L->ay, p->y);
  int r = p->chosen ? L->r_ring : L->r_pt, w = text_w(txt, s), h = GLYPH_H * s;
  const box c4[4] = {{cx + r + 2 * s, cy - r - h, cx + r + 2 * s + w - 1, cy - r - 1},
                     {cx + r + 2 * s, cy + r + 1, cx + r + 2 * s + w - 1, cy + r + h},
                     {cx - r - 2 * s - w + 1, cy - r - h, cx - r - 2 * s, cy - r - 1},
                     {cx - r - 2 * s - w + 1, cy + r + 1, cx - r - 2 * s, cy + r + h}};
  memcpy(cand, c4, sizeof c4);
  int pick = -1, inside = -1;
  for (int q = 0; q < 4 && pick < 0; ++q) {
    if (cand[q].x0 < area.x0 || cand[q].x1 > area.x1 || cand[q].y0 < area.y0 ||
        cand[q].y1 > area.y1)
      continue;
    if (inside < 0) inside = q;
    int clash = 0;
    for (int j = 0; j < np && !clash; ++j) clash = boxes_overlap(&cand[q], &placed[j]);
    if (!clash) pick = q;
  }
  /* the first chosen point's label always; another one only where it overlaps nothing (its ring
   * marks it), so labels never pile up when several layers' chosen points are close */
  if (pick < 0 && p->chosen && np == 0) pick = inside >= 0 ? inside : 0;
  return pick;
}

/* Labels: the chosen points' first (always drawn), then Pareto points' where they fit. placed:
 * n boxes of scratch. */
static void draw_point_labels(canvas *c, const layout *L, const hot_plot_point *pts, int n,
                              box *placed) {
  char txt[512];
  int np = 0;
  for (int pass = 0; pass < 2; ++pass) {
    for (int i = 0; i < n; ++i) {
      const hot_plot_point *p = &pts[i];
      if (!finite_pt(p) || (pass == 0 ? !p->chosen : (p->chosen || !p->pareto || !p->label)))
        continue;
      clip_text(p->label ? p->label : "chosen", 24, txt, sizeof txt);
      box cand[4];
      int pick = label_place(L, p, txt, placed, np, cand);
      if (pick < 0) continue;
      placed[np++] = cand[pick];
      cv_text(c, cand[pick].x0, cand[pick].y0, A_START, L->s, p->chosen ? C_FG : C_SUB,
              p->chosen ? "chosen-label" : "label", txt);
    }
  }
}

/* Markers: dominated points, then Pareto points, then chosen ones on top; then the rings. */
static void draw_markers(canvas *c, const layout *L, const hot_plot_point *pts, int n,
                         const hot_plot_opts *o) {
  const int s = L->s;
  const axis *ax = &L->ax, *ay = &L->ay;
  char txt[512];
  for (int pass = 0; pass < 3; ++pass)
    for (int i = 0; i < n; ++i) {
      const hot_plot_point *p = &pts[i];
      int lvl = p->chosen ? 2 : p->pareto ? 1 : 0;
      if (!finite_pt(p) || lvl != pass) continue;
      tooltip(p, o, txt, sizeof txt);
      cv_disc(c, ax_px(ax, p->x), ax_px(ay, p->y), pass ? L->r_pt : L->r_dom, C_SERIES + p->series,
              "pt", txt);
    }
  for (int i = 0; i < n; ++i)
    if (finite_pt(&pts[i]) && pts[i].chosen)
      cv_ring(c, ax_px(ax, pts[i].x), ax_px(ay, pts[i].y), L->r_ring, s < 2 ? 2 : s, C_RING,
              "chosen");
}

/* Draws the whole plot on c. Returns 0, or -1 when out of memory. */
static int draw(canvas *c, const layout *L, const hot_plot_point *pts, int n,
                const hot_plot_opts *o) {
  cv_fill(c, 0, 0, L->W, L->H, C_BG);
  draw_axes(c, L);
  draw_titles(c, L, o);
  draw_legend(c, L, o);
  int *idx = malloc(sizeof *idx * (size_t)n * 2);
  int *xy = malloc(sizeof *xy * (size_t)n * 4 + 4 * sizeof *xy);
  box *placed = malloc(sizeof *placed * (size_t)n);
  if (!idx || !xy || !placed) {
    free(idx);
    free(xy);
    free(placed);
    return -1;
  }
  draw_fronts(c, L, pts, n, idx, xy);
  draw_point_labels(c, L, pts, n, placed);
  draw_markers(c, L, pts, n, o);
  free(idx);
  free(xy);
  free(placed);
  return 0;
}

/* ---- PNG: CRC-32, Adler-32, chunks, stored deflate ---------------------------------------- */

static void crc32_table(uint32_t table[256]) {
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t v = i;
    for (int k = 0; k < 8; ++k) v = (v & 1) ? 0xEDB88320u ^ (v >> 1) : v >> 1;
    table[i] = v;
  }
}

/* CRC-32 (ISO-HDLC, as PNG uses) of p[0..n-1] continued from crc (0 to start). */
static uint32_t crc32_update(const uint32_t table[256], uint32_t crc, const unsigned char *p,
                             size_t n) {
  crc = ~crc;
  for (size_t i = 0; i < n; ++i) crc = table[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
  return ~crc;
}

static void put_be32(buf *b, uint32_t v) {
  unsigned char q[4] = {(unsigned char)(v >> 24), (unsigned char)(v >> 16), (unsigned char)(v >> 8),
                        (unsigned char)v};
  buf_put(b, q, 4);
}

/* A chunk: length, type, data, CRC-32 of type and data. */
static void png_chunk(buf *b, const uint32_t crct[256], const char *type,
                      const unsigned char *data, size_t n) {
  put_be32(b, (uint32_t)n);
  buf_put(b, type, 4);
  if (n) buf_put(b, data, n);
  uint32_t crc = crc32_update(crct, 0, (const unsigned char *)type, 4);
  if (n) crc = crc32_update(crct, crc, data, n);
  put_be32(b, crc);
}

/* Encodes the canvas as a 4-bit palette PNG into out. */
static void png_encode(const canvas *c, buf *out) {
  static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  uint32_t crct[256];
  crc32_table(crct);
  buf_put(out, sig, 8);
  unsigned char ihdr[13];
  uint32_t W = (uint32_t)c->w, H = (uint32_t)c->h;
  for (int i = 0; i < 4; ++i) {
    ihdr[i] = (unsigned char)(W >> (24 - 8 * i));
    ihdr[4 + i] = (unsigned char)(H >> (24 - 8 * i));
  }
  ihdr[8] = 4;  /* bit depth */
  ihdr[9] = 3;  /* colour type: palette */
  ihdr[10] = 0; /* deflate */
  ihdr[11] = 0; /* adaptive filtering (every row uses filter 0, None) */
  ihdr[12] = 0; /* no interlace */
  png_chunk(out, crct, "IHDR", ihdr, sizeof ihdr);
  png_chunk(out, crct, "PLTE", &k_pal[0][0], sizeof k_pal);

  /* the zlib stream: header, stored blocks of at most 65535 bytes, Adler-32 of the raw rows */
  size_t row = (size_t)(c->w + 1) / 2 + 1, raw_n = row * (size_t)c->h;
  buf z = {0};
  unsigned char hdr[2] = {0x78, 0x01}; /* deflate, 32K window; (0x78 << 8 | 0x01) % 31 == 0 */
  buf_put(&z, hdr, 2);
  unsigned char *rowbuf = malloc(row);
  if (!rowbuf) {
    out->oom = 1;
    return;
  }
  uint32_t a1 = 1, a2 = 0;
  size_t left_in_blk = 0, done = 0;
  for (int y = 0; y < c->h; ++y) {
    memset(rowbuf, 0, row);
    const unsigned char *src = c->px + (size_t)y * (size_t)c->w;
    for (int x = 0; x < c->w; ++x)
      rowbuf[1 + x / 2] |= (unsigned char)(x % 2 ? src[x] : src[x] << 4);
    for (size_t i = 0; i < row;) {
      if (left_in_blk == 0) { /* a new stored block */
        size_t blk = raw_n - done < 65535 ? raw_n - done : 65535;
        unsigned char bh[5] = {(unsigned char)(done + blk == raw_n), (unsigned char)blk,
                               (unsigned char)(blk >> 8), (unsigned char)~blk,
                               (unsigned char)(~blk >> 8)};
        buf_put(&z, bh, 5);
        left_in_blk = blk;
      }
      size_t k = row - i < left_in_blk ? row - i : left_in_blk;
      buf_put(&z, rowbuf + i, k);
      for (size_t j = 0; j < k; ++j) {
        a1 = (a1 + rowbuf[i + j]) % 65521u;
        a2 = (a2 + a1) % 65521u;
      }
      i += k;
      done += k;
      left_in_blk -= k;
    }
  }
  free(rowbuf);
  put_be32(&z, (a2 << 16) | a1);
  if (z.oom) {
    out->oom = 1;
  } else {
    png_chunk(out, crct, "IDAT", z.p, z.len);
    png_chunk(out, crct, "IEND", NULL, 0);
  }
  free(z.p);
}

/* ---- files -------------------------------------------------------------------------------- */

static int write_atomic(const char *path, const unsigned char *data, size_t n, char *err,
                        size_t errlen) {
  size_t pl = strlen(path);
  char *tmp = malloc(pl + 32);
  if (!tmp) {
    set_err(err, errlen, "plot: no memory to write %s", path);
    return -1;
  }
  snprintf(tmp, pl + 32, "%s.tmp.%ld", path, (long)getpid());
  char why[128];
  FILE *f = NULL; /* regular files only: a FIFO or directory at path is refused, not replaced */
  if (fileio_check_regular(path, 0, why, sizeof why) == 0)
    f = fileio_fopen(tmp, "wb", why, sizeof why);
  if (!f) {
    set_err(err, errlen, "plot: cannot write %s: %s", path, why);
    free(tmp);
    return -1;
  }
  int bad = fwrite(data, 1, n, f) != n;
  int e = errno;
  if (fclose(f) != 0 && !bad) {
    bad = 1;
    e = errno;
  }
  if (!bad && rename(tmp, path) != 0) {
    bad = 1;
    e = errno;
  }
  if (bad) {
    set_err(err, errlen, "plot: cannot write %s: %s", path, strerror(e));
    remove(tmp);
  }
  free(tmp);
  return bad ? -1 : 0;
}

static int ascii_lower(int ch) { return ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch; }

static int ext_is(const char *ext, const char *want) {
  for (; *ext && *want; ++ext, ++want)
    if (ascii_lower((unsigned char)*ext) != *want) return 0;
  return *ext == '\0' && *want == '\0';
}

/* ---- the entry point ---------------------------------------------------------------------- */

/* The output's extension: 1 for .svg, 0 for .png; -1 with a message for anything else. */
static int output_kind(const char *path, char *err, size_t errlen) {
  if (!path || !*path) {
    set_err(err, errlen, "plot: no output path");
    return -1;
  }
  const char *slash = strrchr(path, '/'), *dot = strrchr(path, '.');
  if (!dot || (slash && dot < slash)) {
    set_err(err, errlen, "plot: %s has no extension (use .svg or .png)", path);
    return -1;
  }
  int svg = ext_is(dot, ".svg");
  if (!svg && !ext_is(dot, ".png")) {
    set_err(err, errlen, "plot: %s: unsupported extension \"%s\" (use .svg or .png)", path, dot);
    return -1;
  }
  return svg;
}

int hot_plot_format(const char *path, char *err, size_t errlen) {
  return output_kind(path, err, errlen);
}

/* Every point: a series in range, and positive coordinates on a log axis; at least one finite.
 * Returns 0, or -1 with a message naming the point. */
static int check_points(const hot_plot_point *pts, int n, const hot_plot_opts *o, char *err,
                        size_t errlen) {
  int nfin = 0;
  for (int i = 0; i < n; ++i) {
    const hot_plot_point *p = &pts[i];
    const char *lq = p->label ? " \"" : "", *lb = p->label ? p->label : "";
    const char *rq = p->label ? "\"" : "";
    if (p->series < 0 || p->series >= HOT_PLOT_MAX_SERIES) {
      set_err(err, errlen, "plot: point %d%s%s%s: series %d outside 0..%d", i, lq, lb, rq,
              p->series, HOT_PLOT_MAX_SERIES - 1);
      return -1;
    }
    if (!finite_pt(p)) continue;
    ++nfin;
    if (o && o->log_x && p->x <= 0) {
      set_err(err, errlen, "plot: point %d%s%s%s: x = %g is not positive; a log x axis needs x > 0",
              i, lq, lb, rq, p->x);
      return -1;
    }
    if (o && o->log_y && p->y <= 0) {
      set_err(err, errlen, "plot: point %d%s%s%s: y = %g is not positive; a log y axis needs y > 0",
              i, lq, lb, rq, p->y);
      return -1;
    }
  }
  if (nfin == 0) {
    set_err(err, errlen, "plot: none of the %d points has a finite x and y (NaN: not plotted)", n);
    return -1;
  }
  return 0;
}

/* The arguments before any drawing: the point array, the series count, the image size (into
 * L->W, L->H). Returns 0, or -1 with a message. */
static int check_args(layout *L, const hot_plot_point *pts, int n, const hot_plot_opts *o,
                      char *err, size_t errlen) {
  if (!pts || n <= 0) {
    if (!pts)
      set_err(err, errlen, "plot: no points to plot (the point array is NULL)");
    else
      set_err(err, errlen, "plot: no points to plot (n = %d)", n);
    return -1;
  }
  if (o && (o->n_series < 0 || o->n_series > HOT_PLOT_MAX_SERIES)) {
    set_err(err, errlen, "plot: n_series = %d outside 0..%d", o->n_series, HOT_PLOT_MAX_SERIES);
    return -1;
  }
  L->W = o && o->width ? o->width : 960;
  L->H = o && o->height ? o->height : 600;
  if (L->W < HOT_PLOT_MIN_SIZE || L->W > HOT_PLOT_MAX_SIZE || L->H < HOT_PLOT_MIN_SIZE ||
      L->H > HOT_PLOT_MAX_SIZE) {
    set_err(err, errlen, "plot: size %d x %d outside %d..%d per side", L->W, L->H, HOT_PLOT_MIN_SIZE,
            HOT_PLOT_MAX_SIZE);
    return -1;
  }
  return check_points(pts, n, o, err, errlen);
}

/* Draws the plot into *file (SVG text or PNG bytes; the caller frees file->p). Returns 0, or -1
 * when out of memory. */
static int render(const layout *L, const hot_plot_point *pts, int n, const hot_plot_opts *o,
                  int svg, buf *file) {
  canvas c;
  memset(&c, 0, sizeof c);
  c.svg = svg;
  c.w = L->W;
  c.h = L->H;
  int rc = 0;
  if (svg) {
    buf_str(&c.out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    cbuf_printf(&c.out,
               "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" "
               "height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"monospace\">\n",
               L->W, L->H, L->W, L->H);
    if (o && o->title && *o->title) {
      buf_str(&c.out, "<title>");
      svg_escaped(&c, o->title);
      buf_str(&c.out, "</title>\n");
    }
    rc = draw(&c, L, pts, n, o);
    buf_str(&c.out, "</svg>\n");
    *file = c.out;
  } else {
    c.px = calloc((size_t)L->W * (size_t)L->H, 1);
    rc = c.px ? draw(&c, L, pts, n, o) : -1;
    if (rc == 0) png_encode(&c, file);
    free(c.px);
  }
  return rc != 0 || file->oom ? -1 : 0;
}

int hot_plot_write(const char *path, const hot_plot_point *pts, int n, const hot_plot_opts *o,
                   char *err, size_t errlen) {
  if (err && errlen) err[0] = '\0';
  int svg = output_kind(path, err, errlen);
  if (svg < 0) return -1;
  layout L;
  memset(&L, 0, sizeof L);
  if (check_args(&L, pts, n, o, err, errlen) != 0) return -1;
  L.ax.log = o && o->log_x;
  L.ay.log = o && o->log_y;
  if (do_layout(&L, pts, n, o, err, errlen) != 0) return -1;
  buf file = {0};
  if (render(&L, pts, n, o, svg, &file) != 0) {
    set_err(err, errlen, "plot: no memory to draw %s (%d x %d)", path, L.W, L.H);
    free(file.p);
    return -1;
  }
  int rc = write_atomic(path, file.p, file.len, err, errlen);
  free(file.p);
  return rc;
}
