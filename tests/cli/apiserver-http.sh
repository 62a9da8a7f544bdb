#!/bin/bash
# tests/cli/apiserver-http.sh: fatiad over raw HTTP (tests/cli/apiserver_http.py): every error
# code, token rules, conflicts, lifecycle, selectors, paging, watch (expiry, bookmarks, a stuck
# watcher dropped), the limits, and request smuggling (tests/cli/http_smuggle.py), against a
# fatiad with small limits.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
need_python3
start_fatiad "$TMP/data" --watch-history 50 --max-body-bytes 65536 --idle-timeout 2s \
    --watch-backlog 65536 --no-agent -f examples/ || exit 1 # the log endpoint without an agent
python3 tests/cli/apiserver_http.py "$URL" "$CA" "$TOKEN" "$TMP/data" "$FATIA" ||
    fail "HTTP checks failed"
# request smuggling (RFC 9112): conflicting Content-Length, transfer codings other than exactly
# chunked, bare LF in the chunked framing: refused, the smuggled request never served
python3 tests/cli/http_smuggle.py "$URL" /apis/kueue.x-k8s.io/v1beta2/workloadpriorityclasses \
    --ca "$CA" --token "$TOKEN" --chunked-ok || fail "a smuggling attack on fatiad was not refused"
stop_fatiad
finish
