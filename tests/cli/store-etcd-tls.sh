#!/bin/bash
# tests/cli/store-etcd-tls.sh: fatiad on an etcd that serves TLS and wants client certificates
# (--client-cert-auth): with --etcd-cafile, --etcd-certfile and --etcd-keyfile it stores and
# reloads its objects; without the CA (an unverified server) or without a client certificate it
# refuses to start, saying which etcd it could not use.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
need_python3
command -v openssl >/dev/null || skip "openssl not found"
P=$TMP/pki
mkdir -p "$P"
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=test-etcd-ca \
    -keyout "$P/ca.key" -out "$P/ca.crt" >/dev/null 2>&1 || fail "CA"
for who in server client; do
    openssl req -newkey rsa:2048 -nodes -subj "/CN=$who" -keyout "$P/$who.key" \
        -out "$P/$who.csr" >/dev/null 2>&1
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n' >"$P/$who.ext"
    openssl x509 -req -in "$P/$who.csr" -CA "$P/ca.crt" -CAkey "$P/ca.key" -CAcreateserial \
        -days 1 -extfile "$P/$who.ext" -out "$P/$who.crt" >/dev/null 2>&1 || fail "$who certificate"
done
port=$(etcd_free_port)
peer=$(etcd_free_port)
etcd --name tls --data-dir "$TMP/etcd-tls" --listen-client-urls "https://127.0.0.1:$port" \
    --advertise-client-urls "https://127.0.0.1:$port" --listen-peer-urls "http://127.0.0.1:$peer" \
    --initial-advertise-peer-urls "http://127.0.0.1:$peer" --initial-cluster "tls=http://127.0.0.1:$peer" \
    --cert-file "$P/server.crt" --key-file "$P/server.key" --trusted-ca-file "$P/ca.crt" \
    --client-cert-auth "${ETCD_FLAGS[@]}" >"$TMP/etcd-tls.log" 2>&1 &
ETCD_ALL_PIDS+=("$!")
EP=https://127.0.0.1:$port
for _ in $(seq 200); do
    ETCDCTL_API=3 etcdctl --endpoints "$EP" --cacert "$P/ca.crt" --cert "$P/client.crt" \
        --key "$P/client.key" endpoint health >/dev/null 2>&1 && break
    sleep 0.1
done
# no CA: the server's certificate is not trusted
expect_rc 1 timeout 30 "$FATIAD" --data-dir "$TMP/x" --listen 127.0.0.1:0 --no-controllers --no-agent \
    --store etcd --etcd-endpoints "$EP"
expect_line "$TMP/err" "etcd at $EP"
# the CA but no client certificate: etcd refuses the connection
expect_rc 1 timeout 30 "$FATIAD" --data-dir "$TMP/x" --listen 127.0.0.1:0 --no-controllers --no-agent \
    --store etcd --etcd-endpoints "$EP" --etcd-cafile "$P/ca.crt"
expect_line "$TMP/err" "etcd at $EP"
TLSARGS=(--store etcd --etcd-endpoints "$EP" --etcd-cafile "$P/ca.crt" --etcd-certfile "$P/client.crt"
    --etcd-keyfile "$P/client.key")
start_fatiad "$TMP/d" --no-agent "${TLSARGS[@]}" || finish
api POST /api/v1/namespaces -H 'Content-Type: application/json' \
    -d '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"over-tls"}}'
[ "$CODE" = 201 ] || fail "a write over TLS: $CODE"
stop_fatiad
start_fatiad "$TMP/d" --no-agent "${TLSARGS[@]}" || finish
api GET /api/v1/namespaces/over-tls
[ "$CODE" = 200 ] || fail "the namespace written over TLS is gone after a restart: $CODE"
ETCDCTL_API=3 etcdctl --endpoints "$EP" --cacert "$P/ca.crt" --cert "$P/client.crt" \
    --key "$P/client.key" get --keys-only /registry/namespaces/over-tls >"$TMP/k"
expect_line "$TMP/k" "/registry/namespaces/over-tls"
stop_fatiad
finish
