#!/usr/bin/env bash
# package.sh STEP — libhot as an installed library, checked from the outside (CTest label package;
# tests/package/CMakeLists.txt passes the environment below). Steps:
#   install       cmake --install of this build into $WORK/prefix; the installed layout
#   symbols       the exported symbols of libhot.so (nm -D) and libhot.a (nm -g): every one hot_*,
#                 exactly the functions hot.h declares, each declared with HOT_API
#   header-c      #include <hot.h> alone (and hot_types.h alone) as C11, -Wall -Wextra -Werror -pedantic
#   header-cxx    #include <hot.h> alone as C++11 -Wall -Wextra -Werror (skipped, exit 77, without C++)
#   find-package  tests/package/consumer through find_package(hot): libhot.so, libhot.a, and
#                 libhot.a inside a shared object
#   pkg-config    the consumer compiled by hand with pkg-config hot (shared, and --static)
#   subdirectory  the consumer with add_subdirectory(<this source tree>)
#   isolated      with this source and build tree hidden (a private mount namespace, else strace
#                 proving no file of them is opened): the installed hot-gen plans and emits a spec,
#                 the consumer loads it and JIT-compiles it for sm_80 from the embedded templates
#   cleanup       removes $WORK
# Environment: HOT_PKG_SOURCE, HOT_PKG_BUILD, HOT_PKG_WORK, HOT_PKG_CONFIG (build config),
# HOT_PKG_VERSION, HOT_PKG_LIBDIR, HOT_PKG_INCLUDEDIR, HOT_PKG_GENERATOR, HOT_PKG_CFLAGS,
# HOT_PKG_DEPS_PREFIX, CMAKE, CC, CXX (empty: none), PKG_CONFIG (empty: none).
set -euo pipefail
step=${1:?usage: package.sh STEP}
: "${HOT_PKG_SOURCE:?}" "${HOT_PKG_BUILD:?}" "${HOT_PKG_WORK:?}" "${CMAKE:?}" "${CC:?}"
W=$HOT_PKG_WORK
P=$W/prefix
LIBDIR=$P/${HOT_PKG_LIBDIR:-lib}
INCDIR=$P/${HOT_PKG_INCLUDEDIR:-include}
CONSUMER=$HOT_PKG_SOURCE/tests/package/consumer
CFLAGS_EXTRA=${HOT_PKG_CFLAGS:-}
export HOT_BACKEND=cpu HOT_NO_DISK_CACHE=1

die() { echo "FAIL: $*" >&2; exit 1; }
say() { echo "== $*"; }
run() { echo "+ $*"; "$@"; }

need_prefix() { [[ -f $INCDIR/hot.h ]] || die "no installed prefix at $P (run the install step first)"; }

# The functions hot.h declares: every line that starts a declaration of a hot_* function.
declared() { grep -E '^[A-Za-z_].*\bhot_[a-z0-9_]+\(' "$INCDIR/hot.h" | sed -E 's/.*\b(hot_[a-z0-9_]+)\(.*/\1/' | sort -u; }

case $step in
install)
  rm -rf "$W"; mkdir -p "$W"
  run "$CMAKE" --install "$HOT_PKG_BUILD" --prefix "$P" ${HOT_PKG_CONFIG:+--config "$HOT_PKG_CONFIG"} >"$W/install.log" \
    || { cat "$W/install.log"; die "cmake --install failed"; }
  ver=$HOT_PKG_VERSION; major=${ver%%.*}
  for f in "$LIBDIR/libhot.so.$ver" "$LIBDIR/libhot.a" "$INCDIR/hot.h" "$INCDIR/hot_types.h" \
           "$LIBDIR/cmake/hot/hot-config.cmake" "$LIBDIR/cmake/hot/hot-config-version.cmake" \
           "$LIBDIR/cmake/hot/hot-targets.cmake" "$LIBDIR/pkgconfig/hot.pc" "$P/bin/hot-gen" "$P/bin/hot-bench"; do
    [[ -f $f ]] || die "not installed: ${f#$P/}"
  done
  [[ $(readlink "$LIBDIR/libhot.so") == "libhot.so.$major" ]] || die "libhot.so does not link to libhot.so.$major"
  [[ $(readlink "$LIBDIR/libhot.so.$major") == "libhot.so.$ver" ]] || die "libhot.so.$major does not link to libhot.so.$ver"
  soname=$(readelf -d "$LIBDIR/libhot.so.$ver" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
  [[ $soname == "libhot.so.$major" ]] || die "SONAME is '$soname', expected libhot.so.$major"
  # Internal headers stay internal.
  extra=$(cd "$INCDIR" && ls | grep -v -x -e hot.h -e hot_types.h || true)
  [[ -z $extra ]] || die "unexpected files in include/: $extra"
  (cd "$P" && find . -type f -o -type l | sort)
  echo "installed into $P: libhot.so.$ver (SONAME $soname), libhot.a, hot.h, hot_types.h, CMake package, hot.pc, hot-gen, hot-bench"
  ;;

symbols)
  need_prefix
  mapfile -t api < <(declared)
  (( ${#api[@]} >= 20 )) || die "only ${#api[@]} functions found in hot.h: the declaration scan is broken"
  # Each declaration carries HOT_API (a declaration without it would be hidden in the library).
  missing_api=$(grep -E '^[A-Za-z_].*\bhot_[a-z0-9_]+\(' "$INCDIR/hot.h" | grep -v '^HOT_API ' || true)
  [[ -z $missing_api ]] || die "declared in hot.h without HOT_API: $missing_api"
  so_syms=$(nm -D --defined-only "$LIBDIR/libhot.so" | awk 'NF>=3 && $2 ~ /[A-Z]/ {print $3}' | sort -u)
  a_syms=$(nm --defined-only -g "$LIBDIR/libhot.a" | awk 'NF>=3 && $2 ~ /[A-Z]/ {print $3}' | sort -u)
  status=0
  for which in so a; do
    if [[ $which == so ]]; then syms=$so_syms; lib=libhot.so; else syms=$a_syms; lib=libhot.a; fi
    bad=$(grep -v '^hot_' <<<"$syms" || true)
    [[ -z $bad ]] || { echo "FAIL: $lib exports names without the hot_ prefix:" $bad >&2; status=1; }
    undeclared=$(comm -23 <(echo "$syms") <(printf '%s\n' "${api[@]}"))
    [[ -z $undeclared ]] || { echo "FAIL: $lib exports functions hot.h does not declare:" $undeclared >&2; status=1; }
    absent=$(comm -13 <(echo "$syms") <(printf '%s\n' "${api[@]}"))
    [[ -z $absent ]] || { echo "FAIL: $lib lacks functions hot.h declares:" $absent >&2; status=1; }
    echo "$lib: $(wc -l <<<"$syms") global symbols"
  done
  (( status == 0 )) || exit 1
  echo "libhot.so and libhot.a export exactly the ${#api[@]} HOT_API functions of hot.h, all hot_*"
  ;;

header-c)
  need_prefix
  for h in hot.h hot_types.h; do
    printf '#include <%s>\nint hot_header_check;\n' "$h" >"$W/header_$h.c"
    run "$CC" -std=c11 -Wall -Wextra -Werror -pedantic -I"$INCDIR" -c "$W/header_$h.c" -o "$W/header_$h.o" \
      || die "$h does not compile alone as C11"
  done
  echo "hot.h and hot_types.h compile alone as C11 (-Wall -Wextra -Werror -pedantic) from the installed include/"
  ;;

header-cxx)
  need_prefix
  if [[ -z ${CXX:-} ]]; then
    echo "SKIP: no C++ compiler found: hot.h was NOT checked as C++"
    exit 77
  fi
  printf '#include <hot.h>\nint main() { hot_options o; hot_options_init(&o); hot_layer_spec s; return (int)hot_layer_spec_defaults(&s, HOT_RECIPE_HOT) + (int)o.backend; }\n' >"$W/header_cxx.cpp"
  run "$CXX" -std=c++11 -Wall -Wextra -Werror -pedantic -I"$INCDIR" -c "$W/header_cxx.cpp" -o "$W/header_cxx.o" \
    || die "hot.h does not compile as C++11"
  echo "hot.h compiles as C++11 (-Wall -Wextra -Werror -pedantic)"
  ;;

find-package)
  need_prefix
  B=$W/fp; rm -rf "$B"
  run "$CMAKE" -S "$CONSUMER" -B "$B" ${HOT_PKG_GENERATOR:+-G "$HOT_PKG_GENERATOR"} -DCMAKE_PREFIX_PATH="$P" \
    -DHOT_CONSUMER_MODE=package -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER="$CC" \
    ${CFLAGS_EXTRA:+-DCMAKE_C_FLAGS="$CFLAGS_EXTRA"} >"$B.configure.log" 2>&1 \
    || { cat "$B.configure.log"; die "configure of the consumer with find_package(hot) failed"; }
  grep -E 'hot|Lua' "$B.configure.log" || true
  run "$CMAKE" --build "$B" -j 2 >"$B.build.log" 2>&1 || { cat "$B.build.log"; die "consumer build failed"; }
  readelf -d "$B/consumer" | grep -q 'NEEDED.*\[libhot\.so\.' || die "consumer does not load libhot.so"
  ! readelf -d "$B/consumer_static" | grep -q 'NEEDED.*libhot' || die "consumer_static loads libhot.so"
  ! readelf -d "$B/libconsumer_ext.so" | grep -q 'NEEDED.*libhot' || die "libconsumer_ext.so loads libhot.so"
  # position-independent: neither shared object needs its text relocated at load time
  for so in "$B/libconsumer_ext.so" "$LIBDIR/libhot.so"; do
    ! readelf -d "$so" | grep -q TEXTREL || die "$so has text relocations (objects not compiled PIC)"
  done
  for exe in consumer consumer_static consumer_via_ext; do
    say "$exe"
    (cd "$W" && "$B/$exe") || die "$exe failed"
  done
  ;;

pkg-config)
  need_prefix
  [[ -n ${PKG_CONFIG:-} ]] || die "pkg-config is not installed"
  export PKG_CONFIG_PATH=$LIBDIR/pkgconfig
  v=$("$PKG_CONFIG" --modversion hot) || die "pkg-config cannot find hot in $PKG_CONFIG_PATH"
  [[ $v == "$HOT_PKG_VERSION" ]] || die "pkg-config hot --modversion says $v, expected $HOT_PKG_VERSION"
  cflags=$("$PKG_CONFIG" --cflags hot); libs=$("$PKG_CONFIG" --libs hot); slibs=$("$PKG_CONFIG" --static --libs hot)
  echo "cflags: $cflags"; echo "libs: $libs"; echo "static libs: $slibs"
  B=$W/pc; rm -rf "$B"; mkdir -p "$B"
  # shared: -lhot finds libhot.so; static: the same flags with libhot.a named explicitly
  run "$CC" -std=c11 -Wall -Wextra -Werror $CFLAGS_EXTRA $cflags -rdynamic "$CONSUMER/main.c" "$CONSUMER/consumer.c" \
    -o "$B/consumer" $libs -lm -Wl,-rpath,"$LIBDIR" || die "shared link with pkg-config failed"
  run "$CC" -std=c11 -Wall -Wextra -Werror $CFLAGS_EXTRA $cflags -rdynamic "$CONSUMER/main.c" "$CONSUMER/consumer.c" \
    -o "$B/consumer_static" ${slibs/-lhot/-l:libhot.a} -lm || die "static link with pkg-config --static failed"
  readelf -d "$B/consumer" | grep -q 'NEEDED.*\[libhot\.so\.' || die "consumer does not load libhot.so"
  ! readelf -d "$B/consumer_static" | grep -q 'NEEDED.*libhot' || die "consumer_static loads libhot.so"
  for exe in consumer consumer_static; do
    say "$exe"
    (cd "$W" && "$B/$exe") || die "$exe failed"
  done
  ;;

subdirectory)
  B=$W/sub; rm -rf "$B"; mkdir -p "$W"
  run "$CMAKE" -S "$CONSUMER" -B "$B" ${HOT_PKG_GENERATOR:+-G "$HOT_PKG_GENERATOR"} -DHOT_CONSUMER_MODE=subdirectory \
    -DHOT_SOURCE_TREE="$HOT_PKG_SOURCE" -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER="$CC" \
    ${HOT_PKG_DEPS_PREFIX:+-DHOT_DEPS_PREFIX="$HOT_PKG_DEPS_PREFIX"} \
    ${CFLAGS_EXTRA:+-DCMAKE_C_FLAGS="$CFLAGS_EXTRA"} >"$B.configure.log" 2>&1 \
    || { cat "$B.configure.log"; die "configure of the consumer with add_subdirectory(hot) failed"; }
  # hot's own tests, examples and install rules stay out of a parent project
  [[ ! -e $B/hot/tests ]] || die "hot added its tests to the parent project"
  [[ ! -e $B/hot/examples ]] || die "hot added its examples to the parent project"
  ! grep -q 'libhot' "$B/hot/cmake_install.cmake" || die "hot added install rules to the parent project"
  run "$CMAKE" --build "$B" -j 2 >"$B.build.log" 2>&1 || { cat "$B.build.log"; die "consumer build failed"; }
  for exe in consumer consumer_static; do
    say "$exe"
    (cd "$W" && "$B/$exe") || die "$exe failed"
  done
  ;;

isolated)
  need_prefix
  [[ -x $W/fp/consumer ]] || die "no consumer built (the find-package step runs first)"
  I=$W/iso; rm -rf "$I"; mkdir -p "$I/empty"
  cat >"$I/small.lua" <<'LUA'
local hot = require "hot"
return hot.model {
  name = "small", batch = 2, tokens = 64,
  layers = { hot.linear { name = "fc", in_features = 64, out_features = 32 } },
}
LUA
  cat >"$I/run.sh" <<RUN
set -e
cd "$I"
"$P/bin/hot-gen" small.lua --plan
"$P/bin/hot-gen" small.lua --emit "$I/emit"
grep -q 'extern "C"' "$I"/emit/*.cu
echo "hot-gen: planned and emitted small.lua from the embedded DSL and templates"
"$W/fp/consumer" "$I/small.lua" --compile
RUN
  hidden=("$HOT_PKG_SOURCE")
  case $HOT_PKG_BUILD/ in "$HOT_PKG_SOURCE"/*) ;; *) hidden+=("$HOT_PKG_BUILD") ;; esac
  case $W/ in "$HOT_PKG_SOURCE"/*|"$HOT_PKG_BUILD"/*) die "the work folder $W lies inside the tree it must hide" ;; esac
  mounts=""; for d in "${hidden[@]}"; do mounts+="mount --bind '$I/empty' '$d' && "; done
  if unshare -r -m true 2>/dev/null; then
    echo "hiding ${hidden[*]} (private mount namespace)"
    unshare -r -m bash -c "${mounts} [ -z \"\$(ls -A '$HOT_PKG_SOURCE')\" ] && bash '$I/run.sh'" \
      || die "the installed hot-gen or consumer failed with the source tree out of reach"
  elif command -v strace >/dev/null && strace -f -o /dev/null true 2>/dev/null; then
    echo "no mount namespace here: checking with strace that nothing under ${hidden[*]} is opened"
    strace -f -e trace=%file -o "$I/strace.log" bash "$I/run.sh" || die "the installed hot-gen or consumer failed"
    for d in "${hidden[@]}"; do
      if grep -F "\"$d/" "$I/strace.log" | grep -v -F "$I/" | head -5 | grep .; then
        die "files under $d were used (above)"
      fi
    done
  else
    echo "SKIP: neither a mount namespace (unshare -r -m) nor strace is available: the installed"
    echo "      library was NOT checked with the source tree out of reach"
    exit 77
  fi
  ;;

cleanup)
  rm -rf "$W"
  ;;

*) die "unknown step '$step'" ;;
esac
