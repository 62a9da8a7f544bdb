# tests/cli/gateway_tenants.sh: the gateway's per-tenant API keys and rates (--api-keys,
# --tenant-rate; gateway/tenants.h), tried as a tenant without a key, with a wrong one, a guessed
# prefix or a key in the wrong place would: every such request is 401, /health stays open, the
# key never reaches the model server, a tenant over its rate gets 429 while another tenant is
# served, and both are counted per tenant in /metrics. Bad keys files are refused naming
# file:line. engine-sim takes the same keys file for its /v1/ paths.
. "$(dirname "$0")/lib.bash"
PIDS=""
trap 'for p in $PIDS; do kill -9 $p 2>/dev/null; done; rm -rf "$TMP"' EXIT

python3 tests/gateway/fake_upstream.py "$TMP/fake.port" &
PIDS="$PIDS $!"
disown $!
for _ in $(seq 200); do [ -s "$TMP/fake.port" ] && break; sleep 0.02; done
PORT_fake=$(cat "$TMP/fake.port")

KA=alice-key-0123456789abcdef
KA2=alice-second-key-0123456789
KB=bob-key-0123456789abcdefgh
printf '# tenants\n%s alice\n\n%s  bob\n%s\talice\n' "$KA" "$KB" "$KA2" >"$TMP/keys"

# bad files name the line
printf 'short alice\n' >"$TMP/k1"
printf '%s alice\n%s bob\n' "$KA" "$KA" >"$TMP/k2"
printf '%s ali{ce}\n' "$KA" >"$TMP/k3"
printf '%s\n' "$KA" >"$TMP/k4"
printf '# nothing\n' >"$TMP/k5"
for k in 1 2 3 4 5; do
    expect_rc 1 "$FATIA" gateway --listen 127.0.0.1:0 --endpoints http://127.0.0.1:1 \
        --api-keys "$TMP/k$k"
done
expect_rc 1 "$FATIA" gateway --listen 127.0.0.1:0 --endpoints http://127.0.0.1:1 --api-keys "$TMP/k1"
expect_line "$TMP/err" "k1:1: the key must be 16 to 512 visible ASCII characters"
expect_rc 1 "$FATIA" gateway --listen 127.0.0.1:0 --endpoints http://127.0.0.1:1 --api-keys "$TMP/k2"
expect_line "$TMP/err" "k2:2: this key is already given"
expect_rc 1 "$FATIA" gateway --listen 127.0.0.1:0 --endpoints http://127.0.0.1:1 --api-keys "$TMP/k3"
expect_line "$TMP/err" "k3:1: tenant 'ali{ce}': expected 1 to 63 of [A-Za-z0-9._-]"
expect_rc 2 "$FATIA" gateway --listen 127.0.0.1:0 --endpoints http://127.0.0.1:1 --tenant-rate 3

rm -f "$TMP/gw.port"
"$FATIA" gateway --listen 127.0.0.1:0 --health-interval 50ms --metrics-interval 20ms \
    --endpoints "http://127.0.0.1:$PORT_fake" --api-keys "$TMP/keys" --tenant-rate 4 \
    --port-file "$TMP/gw.port" 2>"$TMP/gw.log" &
PIDS="$PIDS $!"
disown $!
for _ in $(seq 200); do [ -s "$TMP/gw.port" ] && break; sleep 0.02; done
GW=localhost:$(cat "$TMP/gw.port")
for _ in $(seq 250); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "$GW/health")" = 200 ] && break
    sleep 0.02
done
expect_line "$TMP/gw.log" "API keys required"

code() { curl -s -o "$TMP/body" -w '%{http_code}' "$@"; }
URL="$GW/v1/completions?mode=head"
# the attacks: each must be 401
[ "$(code "$URL" -d '{}')" = 401 ] || fail "no key: not 401"
expect_line "$TMP/body" "a valid API key is required"
[ "$(code -H "Authorization: Bearer wrong-key-0123456789abcdef" "$URL" -d '{}')" = 401 ] ||
    fail "a wrong key: not 401"
[ "$(code -H "Authorization: Bearer ${KA%?}" "$URL" -d '{}')" = 401 ] ||
    fail "a prefix of a real key: not 401"
[ "$(code -H "Authorization: Bearer ${KA}x" "$URL" -d '{}')" = 401 ] ||
    fail "a real key with a byte more: not 401"
[ "$(code -H "Authorization: Bearer " "$URL" -d '{}')" = 401 ] || fail "an empty key: not 401"
[ "$(code -H "Authorization: $KA" "$URL" -d '{}')" = 401 ] || fail "a key without Bearer: not 401"
[ "$(code -H "Authorization: Basic $(printf 'alice:%s' "$KA" | base64 -w0)" "$URL" -d '{}')" = 401 ] ||
    fail "Basic credentials: not 401"
[ "$(code -H "X-Api-Key: $KA" "$URL" -d '{}')" = 401 ] || fail "a key in another header: not 401"
[ "$(code -H "Authorization: Bearer alice" "$URL" -d '{}')" = 401 ] ||
    fail "the tenant's name as a key: not 401"
[ "$(code "$GW/metrics")" = 401 ] || fail "/metrics without a key: not 401"
[ "$(code "$GW/v1/models")" = 401 ] || fail "/v1/models without a key: not 401"
[ "$(code "$GW/health")" = 200 ] || fail "/health must stay open"

# a real key: served, and the key is not forwarded to the model server
[ "$(code -H "Authorization: Bearer $KA" "$URL" -d '{}')" = 200 ] || fail "alice's key: not 200"
grep -qi '^POST /v1/completions' "$TMP/body" || fail "the model server did not get the request"
grep -qi 'authorization' "$TMP/body" && fail "the tenant's key was forwarded to the model server"
grep -q "$KA" "$TMP/body" && fail "the tenant's key reached the model server"
[ "$(code -H "authorization: bearer $KA2" "$URL" -d '{}')" = 200 ] ||
    fail "alice's second key (scheme and header name in lower case): not 200"

# the rate: bob sends 12 in a row, about 4 (the burst) pass; alice is still served
ok=0
lim=0
t0=$(date +%s.%N)
for i in $(seq 12); do
    c=$(code -H "Authorization: Bearer $KB" "$GW/v1/completions" -d '{}')
    [ "$c" = 200 ] && ok=$((ok + 1))
    [ "$c" = 429 ] && lim=$((lim + 1)) && cp "$TMP/body" "$TMP/limited"
done
t1=$(date +%s.%N)
# at most the burst plus what the bucket refilled while the loop ran (a loaded machine is slow)
dt=$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')
awk -v ok="$ok" -v t="$dt" 'BEGIN { exit !(ok >= 4 && ok <= 4 + 4 * t + 1) }' ||
    fail "bob: $ok of 12 passed a rate of 4/s in $dt s"
[ "$lim" -ge 1 ] || fail "bob: none of 12 was 429"
expect_line "$TMP/limited" "tenant bob is over its rate of 4 requests per second"
[ "$(code -H "Authorization: Bearer $KA" "$URL" -d '{}')" = 200 ] ||
    fail "alice must not pay for bob's rate"
sleep 1.1
[ "$(code -H "Authorization: Bearer $KB" "$URL" -d '{}')" = 200 ] || fail "bob's bucket refills"

# per-tenant counters
curl -s -H "Authorization: Bearer $KA" "$GW/metrics" >"$TMP/m"
expect_line "$TMP/m" 'fatia_gateway_tenant_requests_total{tenant="alice"} '
expect_line "$TMP/m" 'fatia_gateway_tenant_requests_total{tenant="bob"} '
grep -q 'fatia_gateway_tenant_rate_limited_total{tenant="bob"} [1-9]' "$TMP/m" ||
    fail "bob's refusals are not counted"
expect_line "$TMP/m" 'fatia_gateway_tenant_rate_limited_total{tenant="alice"} 0'
grep -q 'fatia_gateway_unauthorized_total 1[0-9]' "$TMP/m" || fail "the 401s are not counted"

# engine-sim with keys: /v1/ needs one, /health and /metrics stay open for the gateway's probes
rm -f "$TMP/es.port"
"$FATIA" engine-sim --listen 127.0.0.1:0 --speed 50 --api-keys "$TMP/keys" \
    --port-file "$TMP/es.port" 2>"$TMP/es.log" &
PIDS="$PIDS $!"
disown $!
for _ in $(seq 200); do [ -s "$TMP/es.port" ] && break; sleep 0.02; done
ES=127.0.0.1:$(cat "$TMP/es.port")
BODY='{"model":"llama-3.1-8b","prompt":"x","max_tokens":2}'
[ "$(code "$ES/v1/completions" -d "$BODY")" = 401 ] || fail "engine-sim: no key, not 401"
[ "$(code -H "Authorization: Bearer ${KB%?}" "$ES/v1/completions" -d "$BODY")" = 401 ] ||
    fail "engine-sim: a prefix of a key, not 401"
[ "$(code "$ES/v1/models")" = 401 ] || fail "engine-sim: /v1/models without a key, not 401"
[ "$(code -H "Authorization: Bearer $KB" "$ES/v1/completions" -d "$BODY")" = 200 ] ||
    fail "engine-sim: bob's key, not 200"
[ "$(code "$ES/health")" = 200 ] || fail "engine-sim: /health must stay open"
[ "$(code "$ES/metrics")" = 200 ] || fail "engine-sim: /metrics must stay open"
expect_line "$TMP/es.log" "API keys required"
# beyond loopback without keys: a warning
rm -f "$TMP/es2.port"
"$FATIA" engine-sim --listen :0 --port-file "$TMP/es2.port" 2>"$TMP/es2.log" &
PIDS="$PIDS $!"
disown $!
for _ in $(seq 200); do [ -s "$TMP/es2.port" ] && break; sleep 0.02; done
sleep 0.1
expect_line "$TMP/es2.log" "without --api-keys: anyone who reaches it may use it"
finish
