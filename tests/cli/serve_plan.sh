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
finish
