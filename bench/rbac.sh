#!/bin/bash
# bench/rbac.sh BUILD [N]: what RBAC costs a request (src/apiserver/authz.c). fatiad on a fresh data
# directory, plain HTTP, N (default 2000) GETs of one ConfigMap over one keep-alive connection as
# each of: the admin (system:masters: no RBAC walk), a tenant token (a binding of the aggregated
# ClusterRole admin: three levels of aggregation resolved per request), a token with no namespace
# bound by a stored RoleBinding to a Role, and a refused user (every binding walked). Prints the
# median and p99 latency per request of each, in microseconds.
set -eu
BUILD=${1:?usage: bench/rbac.sh BUILD [N]}
N=${2:-2000}
TMP=$(mktemp -d /tmp/fatia-rbac-bench.XXXXXX)
D=$TMP/data
trap 'kill $PID 2>/dev/null; rm -rf "$TMP"' EXIT
mkdir -p "$D"
"$BUILD/bin/fatiad" --data-dir "$D" --listen 127.0.0.1:0 --no-tls --no-controllers >"$TMP/log" 2>&1 &
PID=$!
for _ in $(seq 500); do grep -q "serving the Kubernetes API" "$TMP/log" && break; sleep 0.02; done
URL=$(grep -o 'http://127.0.0.1:[0-9]*' "$TMP/log" | tail -1)
ADMIN=$(awk '$2 == "admin" {print $1; exit}' "$D/tokens")
"$BUILD/bin/fatia" token create --data-dir "$D" --user alice --namespace team-a >/dev/null 2>&1
"$BUILD/bin/fatia" token create --data-dir "$D" --user bob --namespace - >/dev/null 2>&1
"$BUILD/bin/fatia" token create --data-dir "$D" --user eve --namespace - >/dev/null 2>&1
python3 - "$URL" "$ADMIN" "$D/tokens" "$N" <<'EOF'
import http.client, json, statistics, sys, time, urllib.parse
url, admin, tokens, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
tok = {l.split()[1]: l.split()[0] for l in open(tokens) if l.strip() and not l.startswith("#")}
u = urllib.parse.urlparse(url)
def call(c, method, path, token, body=None):
    h = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}
    c.request(method, path, body=json.dumps(body) if body else None, headers=h)
    r = c.getresponse(); r.read(); return r.status
c = http.client.HTTPConnection(u.hostname, u.port)
for obj in ({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}},):
    call(c, "POST", "/api/v1/namespaces", admin, obj)
call(c, "POST", "/api/v1/namespaces/team-a/configmaps", admin,
     {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "v"}})
call(c, "POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/team-a/roles", admin,
     {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "r"},
      "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]})
call(c, "POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/team-a/rolebindings", admin,
     {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "b"},
      "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
      "subjects": [{"kind": "User", "name": "bob", "apiGroup": "rbac.authorization.k8s.io"}]})
for who, t, want in (("admin (system:masters)", admin, 200), ("tenant token (admin, aggregated)", tok["alice"], 200),
                     ("stored RoleBinding to a Role", tok["bob"], 200), ("refused", tok["eve"], 403)):
    lat = []
    for i in range(n):
        t0 = time.perf_counter()
        st = call(c, "GET", "/api/v1/namespaces/team-a/configmaps/c", t)
        lat.append((time.perf_counter() - t0) * 1e6)
        assert st == want, (who, st)
    lat.sort()
    print("%-34s median %6.0f us  p99 %6.0f us" % (who, statistics.median(lat), lat[int(len(lat) * 0.99)]))
EOF
