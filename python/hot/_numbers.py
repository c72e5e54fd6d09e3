"""The one parser of numbers for hot's Python code (environment variables, argparse options of
the examples and benchmarks, python/hot itself). It imports nothing of hot, so scripts can load it
by path before libhot is found (examples/hot_import.py: numbers()).

The rule is base/num.h's: an integer is decimal, leading zeros still decimal ("010" is ten), or
hex only after 0x / 0X; no sign, space, exponent, digit separator ("1_000"), non-ASCII digit or
trailing character (int() accepts several of these). A real number, only where an option
documents one (parse_float): ASCII digits with an optional fraction and exponent ("1.5", ".5",
"1e3"); no sign, space, hex, inf or nan. A value outside [lo, hi] or not in the form is refused
with the one message of the C and shell parsers:
    NAME='VALUE': expected an integer in [LO, HI]     (a number in [LO, HI] for parse_float)
tests/reliability/numbers.tsv is the table all three are checked against (test_numbers.py)."""

import os
import re

_DEC = re.compile(r"[0-9]+", re.ASCII)
_HEX = re.compile(r"0[xX][0-9a-fA-F]+", re.ASCII)
_REAL = re.compile(r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?", re.ASCII)


def _shown(s):
    """The value as messages show it: at most 40 characters, control characters as '?'."""
    t = "".join("?" if ord(c) < 0x20 or ord(c) == 0x7F else c for c in s)
    return t[:40] + "..." if len(t) > 40 else t


def _g(x):
    """A limit of a real range as C's %g writes it."""
    return "%g" % x


def parse_int(name, s, lo, hi):
    """s (a str) as an integer in [lo, hi]; ValueError with the one message otherwise."""
    s = "" if s is None else s
    v = None
    if len(s.lstrip("0xX")) > 40:
        pass  # beyond any range (and int()'s digit limit)
    elif _HEX.fullmatch(s):
        v = int(s[2:], 16)
    elif _DEC.fullmatch(s):
        v = int(s, 10)
    if v is None or not lo <= v <= hi:
        raise ValueError(f"{name}='{_shown(s)}': expected an integer in [{int(lo)}, {int(hi)}]")
    return v


def parse_float(name, s, lo, hi):
    """s as a finite real number in [lo, hi] (the grammar above); ValueError otherwise."""
    s = "" if s is None else s
    v = float(s) if len(s) <= 400 and _REAL.fullmatch(s) else None
    if v is None or v != v or v in (float("inf"), float("-inf")) or not lo <= v <= hi:
        raise ValueError(f"{name}='{_shown(s)}': expected a number in [{_g(lo)}, {_g(hi)}]")
    return v


def env_int(name, lo, hi, default=None):
    """$name through parse_int; default when unset or empty (as libhot's env_get)."""
    v = os.environ.get(name)
    return default if not v else parse_int(name, v, lo, hi)


def _arg(parse, lo, hi, kind):
    """An argparse type= converting with parse(name, s, lo, hi); argparse names the option."""
    import argparse

    def conv(s):
        try:
            return parse("value", s, lo, hi)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e).replace("value=", "", 1)) from None
    conv.__name__ = kind
    return conv


def arg_int(lo, hi):
    """An argparse type= for an integer option in [lo, hi] (argparse names the option)."""
    return _arg(parse_int, lo, hi, "integer")


def arg_float(lo, hi):
    """An argparse type= for a real-valued option in [lo, hi]."""
    return _arg(parse_float, lo, hi, "number")
