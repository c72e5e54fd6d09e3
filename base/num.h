/* num.h — the one parser of numbers that a user writes (program options, HOT_* variables, text
 * fields of hot's own files): every C site that turns such text into a number calls it.
 *
 * Integers: decimal, leading zeros still decimal ("010" is ten, never octal), or hex only after
 * 0x / 0X ("0x10" is sixteen); no sign, space, exponent, digit separator, non-ASCII digit or
 * trailing character. Numbers (num_parse_double, only where a site documents a real value):
 * ASCII digits with an optional fraction and exponent ("1.5", ".5", "1e3", "2.5E-3"); no sign,
 * space, hex, inf or nan.
 *
 * A value that does not parse or lies outside [lo, hi] is refused with one line,
 *   NAME='VALUE': expected an integer in [LO, HI]     (limits printed as integers)
 *   NAME='VALUE': expected a number in [LO, HI]       (num_parse_double, limits as %g)
 * where NAME is the option or variable ("--batch", "HOT_CPU_THREADS") and VALUE is cut at 40
 * bytes with control bytes shown as '?'. The same format is printed by the shell
 * (tools/lib/num.sh) and Python (python/hot/_numbers.py) parsers; tests/reliability/numbers.tsv
 * is the one table all three and their call sites are checked against. */
#ifndef HOT_NUM_H
#define HOT_NUM_H

#include <stddef.h>
#include <stdint.h>

/* Parses s as an integer in [lo, hi] into *out. Returns 0, or -1 with the message in err (errlen
 * bytes; *out untouched). s NULL counts as "". name is used in the message only. */
int num_parse_u64(const char *name, const char *s, uint64_t lo, uint64_t hi, uint64_t *out,
                  char *err, size_t errlen);

/* num_parse_u64 for an int: 0 <= lo <= hi <= INT_MAX. */
int num_parse_int(const char *name, const char *s, int lo, int hi, int *out, char *err,
                  size_t errlen);

/* Parses s as a finite number in [lo, hi] (the grammar above) into *out. 0, or -1 with the
 * message in err. */
int num_parse_double(const char *name, const char *s, double lo, double hi, double *out, char *err,
                     size_t errlen);

#endif
