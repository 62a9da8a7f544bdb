# tests/cli/lib.bash: helpers for shell tests. Source it; $1 of the test is the build directory.
set -u
BUILD=${1:?usage: $0 BUILD_DIR}
FATIA=$BUILD/bin/fatia
TMP=$(mktemp -d /tmp/fatia-test.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
FAILS=0

fail() {
    echo "FAIL: $*" >&2
    FAILS=$((FAILS + 1))
}

# expect_rc WANT CMD...: runs CMD, output in $TMP/out and $TMP/err, checks the exit status.
expect_rc() {
    want=$1
    shift
    "$@" >"$TMP/out" 2>"$TMP/err"
    rc=$?
    if [ "$rc" != "$want" ]; then
        fail "'$*' exited $rc, want $want"
        sed 's/^/  out: /' "$TMP/out" >&2
        sed 's/^/  err: /' "$TMP/err" >&2
    fi
}

# expect_line FILE FIXED-STRING: FILE has a line containing the string.
expect_line() {
    if ! grep -qF -- "$2" "$1"; then
        fail "$1 lacks: $2"
        sed 's/^/  | /' "$1" >&2
    fi
}

# skip REASON: the test cannot run here (a tool or a fake is missing). Exits 77, which CTest
# reports as Skipped (SKIP_RETURN_CODE, set on every test), never as Passed. CI fails on a skip
# unless the test is labelled gpu (.ci/run).
skip() {
    echo "skipped: $*"
    exit 77
}

# need_tools TOOL...: skips the test (saying which) unless every TOOL is on PATH.
need_tools() {
    local t
    for t in "$@"; do
        command -v "$t" >/dev/null || skip "$t not found (scripts/setup installs it)"
    done
}

# need_cni: skips the test unless the CNI plugins a container's network needs are installed.
need_cni() {
    local p
    for p in bridge host-local; do
        [ -x "/usr/lib/cni/$p" ] || skip "the CNI plugin /usr/lib/cni/$p is missing (containernetworking-plugins)"
    done
}

# kill_agent_pods GLOB...: SIGKILL, for each agent status file GLOB names
# (DIR/agent/status/*.json), the pod's process group and then its shim, as a test's cleanup does
# to the pods of the fatiads it killed.
kill_agent_pods() {
    local f pg sh
    for f in "$@"; do
        [ -f "$f" ] || continue
        pg=$(grep -o '"pgid":[0-9]*' "$f" | head -1 | cut -d: -f2)
        sh=$(grep -o '"shim":{"pid":[0-9]*' "$f" | head -1 | grep -o '[0-9]*$')
        [ -n "$pg" ] && [ "$pg" -gt 1 ] && kill -9 -- "-$pg" 2>/dev/null
        [ -n "$sh" ] && [ "$sh" -gt 1 ] && kill -9 "$sh" 2>/dev/null
    done
    return 0
}

# need_python3: skip unless python3 is on PATH.
need_python3() {
    command -v python3 >/dev/null || skip "python3 not found"
}

finish() {
    if [ "$FAILS" -gt 0 ]; then
        echo "$FAILS check(s) failed" >&2
        exit 1
    fi
    echo "all checks passed"
}
