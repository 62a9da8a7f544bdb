# tests/cli/snapshot.bash BUILD OUTDIR: runs every `fatia` subcommand, with every -o value, on
# examples/ and the golden inputs, and writes each run's stdout, stderr and exit status to
# OUTDIR/NNN.{cmd,out,err,rc}. Not a test by itself (the name does not end in .sh): it is the
# before/after comparison for refactors of src/cli, used as
#     bash tests/cli/snapshot.bash build /tmp/before   # on the old tree
#     bash tests/cli/snapshot.bash build /tmp/after    # on the new tree
#     diff -r /tmp/before /tmp/after
# The random token of `fatia token create` and sim's timings are masked. Run from the repository root.
set -u
BUILD=${1:?usage: $0 BUILD OUTDIR}
OUT=${2:?usage: $0 BUILD OUTDIR}
FATIA=$BUILD/bin/fatia
rm -rf "$OUT"
mkdir -p "$OUT"
n=0
snap() {
    n=$((n + 1))
    f=$(printf '%s/%03d' "$OUT" "$n")
    printf '%s\n' "$*" >"$f.cmd"
    "$FATIA" "$@" >"$f.out" 2>"$f.err" </dev/null
    echo $? >"$f.rc"
}
OUTS="table json yaml"

snap
snap --help
snap help
for c in validate api-resources schedule plan export token serve engine-sim gateway profiles \
    place sim; do
    snap "$c" --help
    snap help "$c"
    snap "$c" --no-such-option
done
snap serve bench --help
snap no-such-command

# validate
for o in $OUTS wide; do
    snap validate -f examples/ -o "$o"
    snap validate -R -f examples/ -o "$o"
    snap validate -f tests/data/invalid/ -o "$o"
done
snap validate -q -R -f examples/
for f in tests/data/invalid/*; do snap validate -f "$f"; done
snap validate
snap validate -o xml -f examples/
snap validate -f /no/such/file

# api-resources
for o in $OUTS; do snap api-resources -o "$o"; done
snap api-resources

# schedule
for o in $OUTS; do
    snap schedule -f examples/ -o "$o"
    snap schedule -R -f examples/ -o "$o"
done
for d in tests/golden/control/*/; do
    snap schedule -f "$d/input.yaml" -o json
    snap schedule -f "$d/input.yaml"
done
snap schedule -f examples/ --cycles 1
snap schedule -f examples/ --cycles 0
snap schedule -f examples/ --now 2026-11-29T15:04:05Z -o json
snap schedule -f examples/ --now yesterday
snap schedule

# plan and export
for o in $OUTS; do
    snap plan -o "$o"
    snap plan -f examples/fleet/ -o "$o"
done
snap plan -f examples/fleet/ --resourceslices -o json
snap plan -f examples/fleet/ --resourceslices -o yaml
snap plan --inventory bogus
for f in tests/golden/supply/*.yaml; do snap plan --inventory sim -f "$f" -o json; done
for o in yaml json; do
    snap export gpu-operator -f examples/fleet/ -o "$o"
    snap export gpu-operator -o "$o"
done
snap export gpu-operator -f examples/fleet/ -o table
snap export
snap export nothing

# serve
for a in tests/golden/serve-plan/*.args; do
    for o in $OUTS; do
        # shellcheck disable=SC2046
        snap serve plan $(cat "$a") -o "$o"
    done
done
snap serve plan --model llama-3.1-8b
snap serve plan --model no-such-model --gpu h200
snap serve
snap serve nothing

# profiles
for o in $OUTS; do
    snap profiles -f examples/ -o "$o"
    snap profiles -f examples/ --feature model-serving -o "$o"
done
snap profiles -f examples/ -n nowhere
snap profiles -f examples/ -n gpu-catalog
snap profiles

# place
for d in tests/golden/place/*/; do
    args=()
    [ -f "$d/args" ] && read -r -a args <"$d/args"
    for o in $OUTS; do snap place -f "$d/input.yaml" "${args[@]}" -o "$o"; done
done
snap place

# sim
D=tests/data/sim
for o in $OUTS; do
    snap sim -f $D/fleet-2gpu.yaml --trace $D/fifo.csv -o "$o"
    snap sim -f $D/fleet-2gpu.yaml -f $D/kueue.yaml --trace $D/reclaim.csv -o "$o"
    snap sim -f $D/mig-fleet.yaml --trace $D/mig.csv --dynamic-mig free -o "$o"
    snap sim --trace-format alibaba2023 --nodes $D/alibaba-nodes.csv --trace $D/alibaba-pods.csv \
        --fill 130 --seed 7 --placement fragmentation -o "$o"
done
snap sim -f $D/ts-fleet.yaml --trace $D/duty.csv --max-slowdown 2 -o json
snap sim -R -f examples/ --trace $D/profiles.csv -o json
snap sim -f $D/fleet-2gpu.yaml
snap sim --trace $D/fifo.csv

# engine-sim, gateway: their configuration and usage errors (serving is tested elsewhere)
snap engine-sim --listen 127.0.0.1:0 --print-config
snap engine-sim --listen 127.0.0.1:0 --slice 3g.71gb --print-config
snap engine-sim
snap gateway

# token: the token is random; mask it
T=$(mktemp -d)
printf 'apiVersion: v1\nkind: Config\nclusters:\n- name: fatia\n  cluster:\n    server: https://127.0.0.1:6443\n    certificate-authority-data: Q0E=\ncontexts: []\nusers: []\n' >"$T/kubeconfig"
snap token create --user alice --namespace team-a --data-dir "$T"
snap token create --user alice --data-dir "$T"
snap token create --user 'bad name' --namespace team-a --data-dir "$T"
snap token create --user bob --namespace team-a --data-dir "$T/none"
snap token
rm -rf "$T"
for f in "$OUT"/*; do
    sed -i -E -e 's/token: "?[A-Za-z0-9_-]{20,}"?/token: MASKED/' -e "s#$T#TMPDIR#g" \
        -e 's/simulated in [0-9.]+ s \([0-9.]+ s of CPU\)/simulated in T s (T s of CPU)/' "$f"
done
echo "$n runs in $OUT"
