# tools/lib/num.sh — the one parser of numbers for hot's shell scripts (sourced, not run): every
# number a script takes from an argument or the environment goes through num_parse, and the
# scripts do their arithmetic on the value it prints, never on the raw text (so "08" cannot
# reach $(( )), where bash reads it as a bad octal number).
#
# The rule is base/num.h's: decimal, leading zeros still decimal ("010" is ten), hex only after
# 0x / 0X; no sign, space, exponent, digit separator, non-ASCII digit or trailing character; the
# range [MIN, MAX] inclusive (at most 10^18), its limits printed as integers in the one message
#   NAME='VALUE': expected an integer in [MIN, MAX]
# The same table of cases checks this, the C parser and the Python one
# (tests/reliability/numbers.tsv, test_numbers.py).

# num_parse NAME VALUE MIN MAX: prints VALUE's decimal value and returns 0, or prints the message
# on stderr and returns 1. Usage: n=$(num_parse --deadline "$2" 1 86400) || exit 2
num_parse() {
  local name=$1 s=$2 min=$3 max=$4 d v=""
  case $s in
    0[xX]*) d=${s:2}
      if [[ $d =~ ^[0123456789abcdefABCDEF]+$ ]]; then
        d=${d#"${d%%[!0]*}"}  # leading zeros off: at most 15 hex digits fit without overflow
        if [ -z "$d" ]; then v=0; elif [ ${#d} -le 15 ]; then v=$((16#$d)); fi
      fi ;;
    *)
      if [[ $s =~ ^[0123456789]+$ ]]; then
        d=${s#"${s%%[!0]*}"}
        if [ -z "$d" ]; then v=0; elif [ ${#d} -le 18 ]; then v=$((10#$d)); fi
      fi ;;
  esac
  if [ -z "$v" ] || [ "$v" -lt "$min" ] || [ "$v" -gt "$max" ]; then
    printf "%s='%s': expected an integer in [%s, %s]\n" "$name" "$(num_shown "$s")" "$min" "$max" >&2
    return 1
  fi
  printf '%s\n' "$v"
}

# num_list NAME VALUE MIN MAX: a list of numbers separated by spaces or commas, each through
# num_parse; prints them in decimal separated by spaces, or the first message (return 1).
num_list() {
  local name=$1 item out="" v
  local -a items
  IFS=', ' read -r -a items <<<"$2"
  [ ${#items[@]} -gt 0 ] || { printf "%s='': expected a list of integers in [%s, %s]\n" "$name" "$3" "$4" >&2; return 1; }
  for item in "${items[@]}"; do
    v=$(num_parse "$name" "$item" "$3" "$4") || return 1
    out="$out${out:+ }$v"
  done
  printf '%s\n' "$out"
}

# The value as messages show it (num.h's rule): at most 40 bytes, control characters as '?'.
num_shown() {
  local s=${1//[[:cntrl:]]/?}
  if [ ${#s} -gt 40 ]; then printf '%s...' "${s:0:40}"; else printf '%s' "$s"; fi
}
