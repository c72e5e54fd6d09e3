/* plot.h — a self-contained scatter-plot writer for tuning results (SVG or PNG, pure C11 plus
 * POSIX getpid for the temporary file name; no external libraries).
 *
 * One call draws numerical error (y) against time or bytes (x) for the variants of a sweep:
 * "nice" axis ticks (1-2-5 steps on linear axes, decades on log axes) with grid lines and tick
 * labels, axis labels, a title, a legend (one colour per series), every finite point as a filled
 * marker, the Pareto front of each series as a step line through its points sorted by x
 * (horizontal then vertical: the boundary of the region those points dominate), and each chosen
 * point ringed and labelled. Labels of Pareto points are drawn where they do not collide with a
 * label already placed (the first chosen point's label is placed first and always drawn; other
 * chosen points' labels, like Pareto ones, only where they collide with nothing).
 *
 * Formats (from the extension of the path, case-insensitive):
 *  - .svg: an SVG 1.1 document with a viewBox of width x height user units, integer pixel
 *    geometry, text as <text> elements in a monospace font, every text escaped for XML.
 *    Markers of data points are <circle class="pt"> with a <title> tooltip (label, x, y), so a
 *    viewer shows each variant on hover; tick labels are <text class="xtick"|"ytick">.
 *  - .png: a 4-bit palette PNG (colour type 3, at most 16 colours: the plot has no
 *    anti-aliasing) rendered by the built-in rasterizer with a built-in 5x8 bitmap font; the
 *    image data are a zlib stream of stored (uncompressed) deflate blocks, filter type 0 on every
 *    row: height * (ceil(width / 2) + 1) bytes, about 290 KB at 960 x 600. Both formats share one
 *    layout, so a marker's centre in the SVG is the centre pixel of the same marker in the PNG.
 *
 * Output is deterministic (no timestamps; numbers are formatted from integers, so a caller's
 * setlocale() cannot change the file) and written atomically: to "<path>.tmp.<pid>" in the same
 * directory, then renamed over path; on any failure the temporary file is removed and an
 * existing file at path is left untouched. The module keeps no state and never prints or exits;
 * concurrent calls are safe as long as no two of them in one process write the same path.
 * Texts stay inside the image: the title, axis labels and legend names (at most 20 glyphs) are
 * cut with a final '~' where too long; characters outside printable ASCII are kept in the SVG
 * (valid UTF-8; control characters and invalid bytes become '?') and drawn as '?' in the PNG. */
#ifndef HOT_TUNE_PLOT_H
#define HOT_TUNE_PLOT_H

#include <stddef.h>

#define HOT_PLOT_MAX_SERIES 8
#define HOT_PLOT_MIN_SIZE 240   /* smallest width or height accepted (pixels / user units) */
#define HOT_PLOT_MAX_SIZE 8192  /* largest width or height accepted */

/* One point of the plot. Points with a non-finite x or y (NAN: e.g. no time measured without a
 * GPU) are not plotted and take no part in the axis ranges. */
typedef struct {
  double x, y;       /* x: time (ms) or bytes; y: relative error; NAN = not plotted */
  const char *label; /* short, may be NULL (then the chosen point is labelled "chosen") */
  int series;        /* 0..7: one colour + legend entry each (e.g. a layer, or a granularity) */
  int pareto;        /* 1: on the Pareto front (drawn connected by a step line, per series) */
  int chosen;        /* 1: the chosen point (ring + label) */
} hot_plot_point;

/* Options of a plot; every pointer may be NULL (nothing drawn for it), and opts itself may be
 * NULL (no texts, no legend, linear axes, 960 x 600). */
typedef struct {
  const char *title, *x_label, *y_label;
  const char *series_names[HOT_PLOT_MAX_SERIES]; /* legend text of series i (NULL: "series i") */
  int n_series;                                  /* legend entries 0..n_series-1; 0..8 */
  int log_x, log_y; /* log axes (values <= 0 then refused with an error naming the point) */
  int width, height; /* pixels (PNG) / user units (SVG); 0 = 960 x 600 (each independently);
                        otherwise HOT_PLOT_MIN_SIZE..HOT_PLOT_MAX_SIZE */
} hot_plot_opts;

/* Writes the plot of pts[0..n-1] to path; the format comes from the extension (.svg or .png,
 * case-insensitive). Nothing is kept: pts, opts and their strings are only read during the call.
 * Returns 0, or -1 with a one-line message in err (when err is not NULL and errlen > 0; always
 * NUL-terminated, truncated to errlen) for: a NULL path, an extension other than .svg/.png
 * (the message names it), n <= 0 or pts NULL, no point with a finite x and y, a series outside
 * 0..7, n_series outside 0..8, a size outside the limits above or too small for the labels,
 * a log axis with a value <= 0 (the message names the point's index and label), a range of
 * values too wide to draw, no memory, or an I/O error (the message names the path). Nothing is
 * written at path unless the call succeeds. */
int hot_plot_write(const char *path, const hot_plot_point *pts, int n, const hot_plot_opts *opts,
                   char *err, size_t errlen);

/* The format hot_plot_write would write at path: 1 for .svg, 0 for .png; -1 with its one-line
 * message in err for a NULL or empty path or another extension (a caller checks its output
 * before any work). */
int hot_plot_format(const char *path, char *err, size_t errlen);

#endif
