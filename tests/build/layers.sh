#!/bin/bash
# tests/build/layers.sh BUILD CC: a layer sees only the headers of the libraries it links
# (cmake/FatiaLayers.cmake). With the include flags this build gives to a file of each library
# (compile_commands.json), a header of a layer below compiles and a header of a layer above does
# not: model cannot include the API server, control cannot include the store or demand, supply
# cannot include control, and demand can include supply and control.
. "$(dirname "$0")/../cli/lib.bash"
CC=${2:?usage: $0 BUILD CC}
DB=$BUILD/compile_commands.json
[ -f "$DB" ] || { fail "$DB missing"; finish; }

flags_of() { # SOURCE: the -I and -D flags of src/SOURCE in this build
    python3 - "$DB" "$1" <<'PY'
import json, shlex, sys
for c in json.load(open(sys.argv[1])):
    if c["file"].endswith("/src/" + sys.argv[2]):
        args = c.get("arguments") or shlex.split(c["command"])
        print(" ".join(a for a in args if a.startswith(("-I", "-D"))))
        break
else:
    sys.exit("no compile command for src/" + sys.argv[2])
PY
}

try() { # WANT(ok|fails) SOURCE HEADER
    local flags
    flags=$(flags_of "$2") || { fail "$2: not in $DB"; return; }
    printf '#include "%s"\nint layers_probe(void);\nint layers_probe(void) { return 0; }\n' "$3" >"$TMP/probe.c"
    # shellcheck disable=SC2086
    if "$CC" -std=c17 $flags -fsyntax-only "$TMP/probe.c" 2>"$TMP/cc.err"; then
        [ "$1" = ok ] || fail "$2 may include $3, a layer it does not link"
    else
        [ "$1" = fails ] || { fail "$2 cannot include $3"; sed 's/^/  /' "$TMP/cc.err" >&2; }
    fi
}

try ok model/diag.c base/buf.h
try fails model/diag.c apiserver/apiserver.h
try fails model/diag.c supply/plan.h
try ok control/cycle.c model/object.h
try fails control/cycle.c store/store.h
try fails control/cycle.c demand/place.h
try fails supply/plan.c control/control.h
try ok demand/place.c supply/plan.h
try ok demand/place.c control/control.h
try fails demand/place.c apiserver/client.h
try fails store/store.c apiserver/apiserver.h
try ok apiserver/server.c store/store.h
try fails apiserver/server.c controller/controller.h
finish
