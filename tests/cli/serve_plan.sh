# tests/cli/serve_plan.sh: golden cases of `fatia serve plan` (tests/golden/serve-plan/).
# Each NAME.args holds the arguments; NAME.json the expected `-o json` output, checked by hand
# (docs/serving.md works the 3g.71gb case through). UPDATE=1 rewrites the expected files.
. "$(dirname "$0")/lib.bash"
GOLD=tests/golden/serve-plan
n=0
for args in "$GOLD"/*.args; do
    name=$(basename "$args" .args)
    # shellcheck disable=SC2046
    "$FATIA" serve plan $(cat "$args") -o json >"$TMP/out.json" 2>"$TMP/err"
    rc=$?
    if [ "${UPDATE:-}" = 1 ]; then
        cp "$TMP/out.json" "$GOLD/$name.json"
    elif ! diff -u "$GOLD/$name.json" "$TMP/out.json" >"$TMP/diff"; then
        fail "$name: output differs from $GOLD/$name.json"
        sed 's/^/  /' "$TMP/diff" >&2
    fi
    fits=$(grep -c '"fits": true' "$TMP/out.json")
    if { [ "$fits" = 1 ] && [ "$rc" != 0 ]; } || { [ "$fits" = 0 ] && [ "$rc" != 1 ]; }; then
        fail "$name: exit status $rc does not match fits"
    fi
    n=$((n + 1))
done
[ "$n" -ge 10 ] || fail "only $n golden cases found"

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
finish
