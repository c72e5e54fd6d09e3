/* plot_sample.c — writes sample plots for check_plot.py: DIR/a.{png,svg} (linear x, log y,
 * 960 x 600, three series with Pareto fronts, a chosen point, a NaN point) and DIR/b.{png,svg}
 * (log x and y, an odd size, all eight series). Usage: plot_sample DIR */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "plot.h"

static int write(const char *dir, const char *name, const hot_plot_point *p, int n,
                 const hot_plot_opts *o) {
  char path[1024], err[256];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  if (hot_plot_write(path, p, n, o, err, sizeof err) != 0) {
    fprintf(stderr, "plot_sample: %s\n", err);
    return 1;
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: plot_sample DIR\n");
    return 2;
  }
  static const hot_plot_point a[] = {
      {0.8, 0.02, "token", 0, 1, 0},   {1.1, 0.008, "sample", 0, 1, 1}, {1.5, 0.004, "k8", 0, 1, 0},
      {1.3, 0.03, "slow", 0, 0, 0},    {2.2, 0.006, NULL, 0, 0, 0},     {0.6, 0.05, "a&b", 1, 1, 0},
      {0.9, 0.012, "<b>", 1, 1, 0},    {2.5, 0.002, "c", 1, 1, 0},
      {NAN, 0.1, "no time", 1, 0, 0},
      {1.9, 0.015, "d", 2, 0, 0},      {2.8, 0.0009, "e", 2, 1, 0},
  };
  hot_plot_opts o;
  memset(&o, 0, sizeof o);
  o.title = "sweep: error vs time";
  o.x_label = "time (ms)";
  o.y_label = "relative error";
  o.series_names[0] = "fc1";
  o.series_names[1] = "fc2 \"qkv\"";
  o.series_names[2] = "proj";
  o.n_series = 3;
  o.log_y = 1;
  int bad = write(argv[1], "a.png", a, (int)(sizeof a / sizeof a[0]), &o);
  bad |= write(argv[1], "a.svg", a, (int)(sizeof a / sizeof a[0]), &o);

  hot_plot_point b[64];
  for (int i = 0; i < 64; ++i) {
    b[i].x = 1e5 * pow(1.3, i % 23) * (1 + i % 8);
    b[i].y = 1e-4 * pow(1.21, (i * 7) % 31);
    b[i].label = NULL;
    b[i].series = i % 8;
    b[i].pareto = i % 3 == 0;
    b[i].chosen = i == 9;
  }
  memset(&o, 0, sizeof o);
  o.title = "bytes";
  o.x_label = "saved activation bytes";
  o.log_x = o.log_y = 1;
  o.n_series = 8;
  o.width = 641;
  o.height = 401;
  bad |= write(argv[1], "b.png", b, 64, &o);
  bad |= write(argv[1], "b.svg", b, 64, &o);
  return bad;
}
