#!/bin/bash
# tests/build/check-symbols.sh BUILD CC AR: scripts/check-symbols, attacked. The check passes on
# the libraries this build made; then each of three objects is archived into a copy of
# libfatia_control.a and the check must fail, naming the planted reference:
#   - a call of base's clock (fatia_now_mono_usec: base is allowed, its clock is not),
#   - fopen (libc I/O),
#   - fatia_store_open (a layer control may not use).
# And the prefix rule: an unprefixed extern planted in a copy of the API server's library, and a
# name with control's prefix planted in the controllers' library, must each fail the check.
. "$(dirname "$0")/../cli/lib.bash"
CC=${2:?usage: $0 BUILD CC AR}
AR=${3:?usage: $0 BUILD CC AR}
LIB=$BUILD/lib/libfatia_control.a
[ -f "$LIB" ] || { fail "$LIB missing"; finish; }

expect_rc 0 scripts/check-symbols --build "$BUILD"
expect_line "$TMP/out" "no clock, no I/O, no upper layer"
expect_line "$TMP/out" "every extern symbol carries its library's prefix"

plant() { # NAME C-SOURCE [LIB]: $TMP/NAME.a = LIB (the control library) plus that object
    printf '%s\n' "$2" >"$TMP/$1.c"
    "$CC" -c -o "$TMP/$1.o" "$TMP/$1.c" || fail "$1: does not compile"
    cp "${3:-$LIB}" "$TMP/$1.a"
    "$AR" r "$TMP/$1.a" "$TMP/$1.o" || fail "$1: ar"
}

plant clock 'long fatia_now_mono_usec(void); long planted_clock(void); long planted_clock(void) { return fatia_now_mono_usec(); }'
expect_rc 1 scripts/check-symbols --build "$BUILD" --lib control="$TMP/clock.a"
expect_line "$TMP/err" "clock.a(clock.o): references fatia_now_mono_usec: base's clock: denied in a pure policy library"

plant file '#include <stdio.h>
void *planted_file(void); void *planted_file(void) { return fopen("/etc/passwd", "r"); }'
expect_rc 1 scripts/check-symbols --build "$BUILD" --lib control="$TMP/file.a"
expect_line "$TMP/err" "file.a(file.o): references fopen: not on the list of libc functions"

plant upward 'int fatia_store_open(void); int planted_up(void); int planted_up(void) { return fatia_store_open(); }'
expect_rc 1 scripts/check-symbols --build "$BUILD" --lib control="$TMP/upward.a"
expect_line "$TMP/err" "upward.a(upward.o): references fatia_store_open: a symbol of store, which control may not use"

plant bare 'int authorize(void); int authorize(void) { return 0; }' "$BUILD/lib/libfatia_apiserver.a"
expect_rc 1 scripts/check-symbols --build "$BUILD" --lib apiserver="$TMP/bare.a"
expect_line "$TMP/out" "check-symbols: prefix: bare.a(bare.o): authorize carries no prefix of apiserver"
plant theirs 'int fatia_control_x(void); int fatia_control_x(void) { return 0; }' "$BUILD/lib/libfatia_controller.a"
expect_rc 1 scripts/check-symbols --build "$BUILD" --lib controller="$TMP/theirs.a"
expect_line "$TMP/out" "check-symbols: prefix: theirs.a(theirs.o): fatia_control_x carries control's prefix"
finish
