# tests/cli/gateway_pd.sh: prefill/decode disaggregation through the gateway, llm-d's flow: the
# gateway picks a decode pod and, for prompts with enough uncached tokens, a prefill pod named in
# x-prefiller-host-port; the decode engine-sim runs the prefill leg there (max_tokens 1,
# kv_transfer_params) and pulls the KV over the modelled link. Checks the decider (a short
# prompt and a prompt the decode pod already holds skip the prefill pool; "always"), the counters
# of all three servers, streaming, the fallback when the prefill server is gone, and a hostile
# client's own x-prefiller-host-port (stripped: it would aim the decode server's leg anywhere).
. "$(dirname "$0")/lib.bash"
PIDS=""
trap 'for p in $PIDS; do kill -9 $p 2>/dev/null; done; rm -rf "$TMP"' EXIT

start() {
    name=$1
    shift
    rm -f "$TMP/$name.port"
    "$@" --port-file "$TMP/$name.port" 2>"$TMP/$name.log" &
    eval "PID_$name=$!"
    PIDS="$PIDS $!"
    disown $!
    for _ in $(seq 250); do
        [ -s "$TMP/$name.port" ] && break
        sleep 0.02
    done
    eval "PORT_$name=$(cat "$TMP/$name.port")"
}

wait_metric() {
    for _ in $(seq 500); do
        curl -s "localhost:$1/metrics" | grep -qF -- "$2" && return 0
        sleep 0.02
    done
    fail "server :$1 never reported: $2"
}

metric() { curl -s "localhost:$1/metrics" | awk -v m="$2" '$1 == m {print $2}'; }

need_python3
# a decoy that records every connection: a hostile client's prefiller
python3 -c '
import socket, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(8)
open(sys.argv[1], "w").write(str(s.getsockname()[1]))
while True:
    c, _ = s.accept(); open(sys.argv[2], "a").write("hit\n"); c.close()
' "$TMP/decoy.port" "$TMP/decoy.hits" &
PIDS="$PIDS $!"
disown $!
for _ in $(seq 200); do [ -s "$TMP/decoy.port" ] && break; sleep 0.02; done
DECOY=$(cat "$TMP/decoy.port")

SIM="$FATIA engine-sim --listen 127.0.0.1:0 --speed 20 --engine-timestamps"
start p $SIM --role prefill
start d $SIM --role decode
expect_line "$TMP/d.log" "role decode"
GW_OPTS="--health-interval 50ms --metrics-interval 20ms --connect-timeout 500ms --seed 1"
EPS="http://127.0.0.1:$PORT_p#llm-d.ai/role=prefill,http://127.0.0.1:$PORT_d#llm-d.ai/role=decode"
start gw $FATIA gateway --listen 127.0.0.1:0 $GW_OPTS --pd-non-cached-tokens 256 --endpoints "$EPS"
GW=localhost:$PORT_gw
wait_metric "$PORT_gw" "fatia_gateway_endpoint_ready{endpoint=\"127.0.0.1:$PORT_p\"} 1"
wait_metric "$PORT_gw" "fatia_gateway_endpoint_ready{endpoint=\"127.0.0.1:$PORT_d\"} 1"
wait_metric "$PORT_d" 'fatia_engine_sim_info{role="decode"} 1'

# --- a long prompt (2,000 tokens) goes through the prefill pod
LONG=$(printf 'a long document that nobody has sent before, part %04d. ' $(seq 160))
BODY="{\"model\":\"llama-3.1-8b\",\"prompt\":\"$LONG\",\"max_tokens\":5}"
expect_rc 0 curl -sf -D "$TMP/h" "$GW/v1/completions" -d "$BODY"
expect_line "$TMP/out" '"completion_tokens":5'
expect_line "$TMP/h" "x-gateway-destination-endpoint: 127.0.0.1:$PORT_d"
[ "$(metric "$PORT_gw" 'fatia_gateway_pd_decisions_total{decision="disaggregated"}')" = 1 ] ||
    fail "the long prompt was not disaggregated"
[ "$(metric "$PORT_p" fatia_engine_sim_prefill_legs_total)" = 1 ] || fail "no prefill leg served"
[ "$(metric "$PORT_d" fatia_engine_sim_kv_transfers_total)" = 1 ] || fail "no KV pulled"
# the prefill server computed the prompt, the decode server only its last token
ptok=$(metric "$PORT_p" 'vllm:prompt_tokens_total{engine="0",model_name="llama-3.1-8b"}')
dtok=$(metric "$PORT_d" 'vllm:prompt_tokens_total{engine="0",model_name="llama-3.1-8b"}')
[ "${ptok:-0}" -gt 1900 ] || fail "prefill computed $ptok prompt tokens"
[ "$dtok" = 1 ] || fail "decode computed $dtok prompt tokens, want 1"
loaded=$(metric "$PORT_d" fatia_engine_sim_kv_loaded_tokens_total)
[ "$((loaded + 1))" = "$ptok" ] || fail "decode loaded $loaded tokens of a $ptok-token prompt"
bytes=$(metric "$PORT_d" fatia_engine_sim_kv_transfer_bytes_total)
[ "$bytes" = "$((loaded * 131072))" ] || fail "KV bytes $bytes, want $loaded x 128 KiB"

# --- the same prompt again: the decode pod holds it, no prefill
expect_rc 0 curl -sf "$GW/v1/completions" -d "$BODY"
[ "$(metric "$PORT_gw" 'fatia_gateway_pd_decisions_total{decision="decode_only"}')" = 1 ] ||
    fail "a prompt the decode pod holds went to the prefill pool"
# --- a short prompt skips the prefill pool
expect_rc 0 curl -sf "$GW/v1/completions" -d '{"model":"llama-3.1-8b","prompt":"hi there","max_tokens":3}'
[ "$(metric "$PORT_gw" 'fatia_gateway_pd_decisions_total{decision="decode_only"}')" = 2 ] ||
    fail "a short prompt went to the prefill pool"
[ "$(metric "$PORT_p" fatia_engine_sim_prefill_legs_total)" = 1 ] || fail "extra prefill legs"

# --- streamed through P/D: the decode server's stamps include the prefill leg
LONG2=$(printf 'another fresh document for a streamed answer, part %04d. ' $(seq 160))
expect_rc 0 curl -sfN "$GW/v1/completions" \
    -d "{\"model\":\"llama-3.1-8b\",\"prompt\":\"$LONG2\",\"max_tokens\":4,\"stream\":true}"
[ "$(grep -c '^data: {' "$TMP/out")" = 4 ] || fail "expected 4 streamed chunks"
expect_line "$TMP/out" "data: [DONE]"
[ "$(metric "$PORT_p" fatia_engine_sim_prefill_legs_total)" = 2 ] || fail "streamed: no prefill leg"
python3 - "$TMP/out" <<'PY' || fail "the first token came before a prefill could have"
import json, sys
ev = [json.loads(l[6:]) for l in open(sys.argv[1]) if l.startswith("data: {")]
ttft = ev[0]["engine_time"] - ev[0]["engine_arrival"]
# 2,200 tokens on an H200 take about 50 ms to prefill; the decode step after the pull ~6 ms
sys.exit(0 if ttft > 0.03 else 1)
PY

# --- a hostile client names its own prefiller: stripped by the gateway, short or long prompt
expect_rc 0 curl -sf -H "x-prefiller-host-port: 127.0.0.1:$DECOY" "$GW/v1/completions" \
    -d '{"model":"llama-3.1-8b","prompt":"short","max_tokens":2}'
LONG3=$(printf 'a third new document, this one from a hostile tenant, part %04d. ' $(seq 160))
expect_rc 0 curl -sf -H "X-Prefiller-Host-Port: 127.0.0.1:$DECOY" "$GW/v1/completions" \
    -d "{\"model\":\"llama-3.1-8b\",\"prompt\":\"$LONG3\",\"max_tokens\":2}"
sleep 0.2
[ -s "$TMP/decoy.hits" ] && fail "the gateway passed a client's x-prefiller-host-port on"
[ "$(metric "$PORT_p" fatia_engine_sim_prefill_legs_total)" = 3 ] ||
    fail "the hostile long prompt did not go to the real prefill pod"
# a host name is not resolved on the decode server's loop: run in full there
expect_rc 0 curl -sf -H "x-prefiller-host-port: localhost:$PORT_p" "localhost:$PORT_d/v1/completions" \
    -d "{\"model\":\"llama-3.1-8b\",\"prompt\":\"$LONG3 more\",\"max_tokens\":2}"
[ "$(metric "$PORT_p" fatia_engine_sim_prefill_legs_total)" = 3 ] || fail "a host name was resolved"

# --- the prefill server is gone: the decode server prefills itself (fallback), answers 200
kill -9 "$PID_p"
LONG4=$(printf 'a fourth document sent after the prefill server died, part %04d. ' $(seq 160))
expect_rc 0 curl -sf "localhost:$PORT_d/v1/completions" -H "x-prefiller-host-port: 127.0.0.1:$PORT_p" \
    -d "{\"model\":\"llama-3.1-8b\",\"prompt\":\"$LONG4\",\"max_tokens\":3}"
expect_line "$TMP/out" '"completion_tokens":3'
[ "$(metric "$PORT_d" fatia_engine_sim_pd_fallbacks_total)" = 1 ] || fail "no fallback counted"
# and through the gateway once it saw the prefill pod go: decode only, no_prefill or decode_only
wait_metric "$PORT_gw" "fatia_gateway_endpoint_ready{endpoint=\"127.0.0.1:$PORT_p\"} 0"
expect_rc 0 curl -sf "$GW/v1/completions" -d "{\"model\":\"llama-3.1-8b\",\"prompt\":\"$LONG4 again\",\"max_tokens\":2}"

# --- the "always" decider (KServe's LLMInferenceService with spec.prefill): even a short prompt
start p2 $SIM --role prefill
start gw2 $FATIA gateway --listen 127.0.0.1:0 $GW_OPTS --pd-decider always \
    --endpoints "http://127.0.0.1:$PORT_p2#llm-d.ai/role=prefill,http://127.0.0.1:$PORT_d"
wait_metric "$PORT_gw2" "fatia_gateway_endpoint_ready{endpoint=\"127.0.0.1:$PORT_p2\"} 1"
wait_metric "$PORT_gw2" "fatia_gateway_endpoint_ready{endpoint=\"127.0.0.1:$PORT_d\"} 1"
expect_rc 0 curl -sf "localhost:$PORT_gw2/v1/completions" -d '{"model":"llama-3.1-8b","prompt":"hello there","max_tokens":2}'
[ "$(metric "$PORT_p2" fatia_engine_sim_prefill_legs_total)" = 1 ] || fail "always: no prefill leg"
# an unlabelled pod counts as decode; the flags are checked
expect_rc 2 "$FATIA" gateway --listen 127.0.0.1:0 --pd-decider sometimes --endpoints "http://127.0.0.1:1"
expect_line "$TMP/err" "--pd-decider: expected prefix-based, always or never"
expect_rc 2 "$FATIA" engine-sim --listen 127.0.0.1:0 --role router
expect_line "$TMP/err" "--role: expected both, prefill or decode"
"$FATIA" engine-sim --print-config --kv-link rdma --role decode >"$TMP/cfg"
expect_line "$TMP/cfg" '"role": "decode"'
expect_line "$TMP/cfg" '"kvLink": {"bandwidthBytesPerSecond": 4.5e+10, "latencySeconds": 0.0005}'
finish
