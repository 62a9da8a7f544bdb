# tests/cli/serve_plan.sh: `fatia serve plan` beyond its golden cases (tests/golden/serve-plan/,
# run by tests/golden/run, suite serve-plan: each NAME.args holds the arguments, NAME.json the
# expected `-o json` output, checked by hand; docs/serving.md works the 3g.71gb case through):
# every H200 MIG profile has a case, the table form, usage errors, a broken models file.
. "$(dirname "$0")/lib.bash"
GOLD=tests/golden/serve-plan

# Every H200 MIG profile has a Llama-3.1-8B case.
for p in 1g.18gb 1g.18gb+me 1g.35gb 2g.35gb 3g.71gb 4g.71gb 7g.141gb; do
    [ -f "$GOLD/llama-3.1-8b-mig-$p.json" ] || fail "no golden case for profile $p"
done

# The table form carries the flags; the usage errors say what is wrong.
expect_rc 0 "$FATIA" serve plan --model llama-3.1-8b --slice 3g.71gb
expect_line "$TMP/out" "vllm flags:            --tensor-parallel-size=1 --gpu-memory-utilization=0.90"
expect_line "$TMP/out" "kv per token:          131072 bytes"
expect_rc 1 "$FATIA" serve plan --model no-such-model --gpu h200
expect_line "$TMP/err" "unknown model 'no-such-model'"
expect_rc 1 "$FATIA" serve plan --model llama-3.1-8b --slice 5g.99gb
expect_line "$TMP/err" "unknown MIG profile '5g.99gb'"
expect_rc 2 "$FATIA" serve plan --model llama-3.1-8b
expect_rc 2 "$FATIA" serve plan --model llama-3.1-8b --slice 3g.71gb --memory 10Gi
expect_rc 2 "$FATIA" serve plan --model llama-3.1-8b --memory 12x
# A broken models file is reported with its line.
printf 'models:\n  - name: x\n    params: 10\n    layers: 0\n    kvHeads: 8\n    headDim: 64\n' >"$TMP/m.yaml"
expect_rc 1 "$FATIA" serve plan --models-file "$TMP/m.yaml" --model x --gpu h200
expect_line "$TMP/err" "m.yaml:4:13: error: models[0].layers: must be an integer in [1, 4096]"
# A model that does not fit says so, by how much and what would (it once printed a negative KV
# cache, "-7.81 GiB per GPU"); every suggestion, applied to the case's arguments, fits.
expect_rc 1 "$FATIA" serve plan --model llama-3.1-70b --gpu h200
grep -qE -- '-[0-9.]+ GiB' "$TMP/out" && fail "a negative size: $(grep -E -- '-[0-9.]+ GiB' "$TMP/out")"
expect_line "$TMP/out" "kv cache:              none: the weights, activations and overheads alone are 7.81 GiB per GPU over what is available"
expect_line "$TMP/out" "does not fit by:       9.39 GiB per GPU: it needs 149.19 GiB per GPU x 1 for one sequence of 2048 tokens"
expect_line "$TMP/out" "would fit with:        --gpu h200 --gpus 2 (KV cache of 371760 tokens)"
expect_line "$TMP/out" "                       --dtype fp8 (KV cache of 183280 tokens)"
expect_rc 1 "$FATIA" serve plan --model llama-3.1-8b --slice 1g.18gb
expect_line "$TMP/out" "would fit with:        --slice 1g.35gb"
# drop OPT and its value from the words of $1
drop() { echo " $1 " | sed -E "s/ $2 [^ ]+ / /g"; }
alts=0
for args in "$GOLD"/*nofit*.args "$GOLD"/*invalid*.args "$GOLD"/*1g.18gb*.args; do
    base=$(cat "$args")
    python3 -c 'import json, sys; [print(a["args"]) for a in json.load(open(sys.argv[1])).get("wouldFitWith", [])]' \
        "${args%.args}.json" >"$TMP/alts" || fail "$args: no JSON"
    while read -r alt; do
        a=$base
        case "$alt" in
        --gpu\ *) for o in --slice --memory --gpus --gpu; do a=$(drop "$a" $o); done ;;
        --slice\ *) a=$(drop "$a" --slice) ;;
        --dtype\ *) a=$(drop "$a" --dtype) ;;
        --kv-cache-dtype\ *) a=$(drop "$a" --kv-cache-dtype) ;;
        esac
        # shellcheck disable=SC2086
        "$FATIA" serve plan $a $alt >/dev/null 2>&1 || fail "$(basename "$args"): suggested '$alt' does not fit ($a $alt)"
        alts=$((alts + 1))
    done <"$TMP/alts"
done
[ "$alts" -ge 6 ] || fail "only $alts suggestions checked"
# the shortfall is exact to 64 MiB: that much more memory fits, 128 MiB less does not
short=$(python3 -c 'import json; print(json.load(open("'"$GOLD"'/llama-3.1-8b-context-nofit.json"))["shortBytesPerGpu"])')
expect_rc 0 "$FATIA" serve plan --model llama-3.1-8b --memory $((40 * 1024 * 1024 * 1024 + short)) --context 262144
expect_rc 1 "$FATIA" serve plan --model llama-3.1-8b --memory $((40 * 1024 * 1024 * 1024 + short - 128 * 1024 * 1024)) --context 262144
finish
