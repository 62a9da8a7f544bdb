#!/bin/bash
# tests/cli/layers-client.sh: the controllers and the node agent reach fatiad through the client
# interface (src/client/) only (issue 14, "Layers the build enforces"): no symbol that
# libfatia_controller.a or libfatia_agent.a needs is defined by the API server or the store, and
# none is SQLite's; fatia-shim (which links the agent) links neither library nor SQLite. Planting
# a call to fatia_apiserver_add_admission back into controller/webhooks.c makes this fail.
. "$(dirname "$0")/lib.bash"
LIB=$BUILD/lib
command -v nm >/dev/null || { fail "nm not found"; finish; }
for l in apiserver store controller agent; do
    [ -f "$LIB/libfatia_$l.a" ] || fail "missing $LIB/libfatia_$l.a"
done
nm --defined-only "$LIB/libfatia_apiserver.a" "$LIB/libfatia_store.a" 2>/dev/null |
    awk 'NF == 3 && $2 ~ /[TDBRC]/ {print $3}' | sort -u >"$TMP/below"
[ -s "$TMP/below" ] || fail "no symbols read from the API server and store libraries"
grep -qx fatia_apiserver_add_admission "$TMP/below" || fail "the symbol list looks wrong"
for l in controller agent; do
    nm -u "$LIB/libfatia_$l.a" | awk '{print $NF}' | sort -u >"$TMP/u_$l"
    comm -12 "$TMP/u_$l" "$TMP/below" >"$TMP/reach_$l"
    [ -s "$TMP/reach_$l" ] &&
        fail "libfatia_$l.a uses the API server or the store: $(tr '\n' ' ' <"$TMP/reach_$l")"
    grep -q '^sqlite3_' "$TMP/u_$l" && fail "libfatia_$l.a uses SQLite"
done
# the link line CMake generated for fatia-shim (agent only), when the build is Ninja's
if [ -f "$BUILD/build.ninja" ]; then
    awk '/^build bin\/fatia-shim:/ {f = 1} f && /LINK_LIBRARIES/ {print; exit}' \
        "$BUILD/build.ninja" >"$TMP/shim_link"
    [ -s "$TMP/shim_link" ] || fail "no link line for fatia-shim in build.ninja"
    grep -qE 'libfatia_(apiserver|store)\.a|sqlite' "$TMP/shim_link" &&
        fail "fatia-shim links the API server, the store or SQLite: $(cat "$TMP/shim_link")"
fi
finish
