# tests/cli/outputs.sh: every `fatia` subcommand with every -o value it accepts, on real input:
# the table carries the expected rows, -o json is the expected document, -o yaml is the same
# document as -o json, an unknown -o is a usage error naming it. (api-resources: its own test.)
. "$(dirname "$0")/lib.bash"

# same_doc JSON YAML WHAT: the YAML file holds the document of the JSON file, read with YAML 1.2's
# core schema (PyYAML reads YAML 1.1, where 0000:18:00.0 is a base-60 number and a timestamp a date)
cat >"$TMP/same_doc.py" <<'PY'
import json, re, sys, yaml
class Core(yaml.SafeLoader):
    pass
Core.yaml_implicit_resolvers = {}
for tag, rx, first in [
        ("tag:yaml.org,2002:bool", r"^(true|True|TRUE|false|False|FALSE)$", "tTfF"),
        ("tag:yaml.org,2002:null", r"^(~|null|Null|NULL|)$", "~nN"),
        ("tag:yaml.org,2002:int", r"^[-+]?[0-9]+$|^0o[0-7]+$|^0x[0-9a-fA-F]+$", "-+0123456789"),
        ("tag:yaml.org,2002:float",
         r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$|^[-+]?\.(inf|Inf|INF)$|^\.(nan|NaN|NAN)$",
         "-+0123456789.")]:
    Core.add_implicit_resolver(tag, re.compile(rx), list(first))
Core.add_implicit_resolver("tag:yaml.org,2002:null", re.compile(r"^$"), [""])
def norm(v):
    if isinstance(v, dict): return {k: norm(x) for k, x in v.items()}
    if isinstance(v, list): return [norm(x) for x in v]
    if isinstance(v, float): return round(v, 9)
    return v
j = json.load(open(sys.argv[1]))
y = yaml.load(open(sys.argv[2]), Loader=Core)
sys.exit(0 if norm(j) == norm(y) else 1)
PY
same_doc() {
    python3 "$TMP/same_doc.py" "$1" "$2" || fail "$3: -o yaml is not the document of -o json"
}
# q FILE EXPR WANT: python expression over the JSON document d
q() {
    got=$(python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2" 2>&1)
    [ "$got" = "$3" ] || fail "$2: got '$got', want '$3'"
}
# every_output NAME TABLE-LINE JSON-EXPR JSON-WANT ARGS...: runs ARGS with -o table (and its
# default), json and yaml; WANT_RC (default 0) is the exit status expected
every_output() {
    local name=$1 line=$2 expr=$3 jwant=$4 rc=${WANT_RC:-0}
    shift 4
    expect_rc "$rc" "$FATIA" "$@"
    expect_line "$TMP/out" "$line"
    cp "$TMP/out" "$TMP/$name.default"
    expect_rc "$rc" "$FATIA" "$@" -o table
    cmp -s "$TMP/out" "$TMP/$name.default" || fail "$name: -o table is not the default"
    expect_rc "$rc" "$FATIA" "$@" -o json
    cp "$TMP/out" "$TMP/$name.json"
    q "$TMP/$name.json" "$expr" "$jwant"
    expect_rc "$rc" "$FATIA" "$@" -o yaml
    cp "$TMP/out" "$TMP/$name.yaml"
    same_doc "$TMP/$name.json" "$TMP/$name.yaml" "$name"
    expect_rc 2 "$FATIA" "$@" -o xml
    expect_line "$TMP/err" "unknown output format 'xml'"
}

# validate (-o wide is the table too)
every_output validate "ok clusterqueue/team-a" \
    'd["summary"]["invalid"], d["summary"]["valid"] > 10, d["objects"][0]["valid"]' "(0, True, True)" \
    validate -f examples/
expect_rc 0 "$FATIA" validate -f examples/ -o wide
cmp -s "$TMP/out" "$TMP/validate.default" || fail "validate: -o wide is not the table"
WANT_RC=1 every_output validate-bad "invalid clusterqueue/team-a" \
    'd["summary"]["invalid"] >= 1, all(x["level"] in ("error", "warning") for x in d["diagnostics"]), [x["line"] for x in d["diagnostics"] if x["level"] == "error"][0] > 0' \
    "(True, True, True)" validate -f tests/data/invalid/four-errors.yaml

# schedule
G=tests/golden/control/0011-preempt-in-clusterqueue-and-cohort
every_output schedule "ADMITTED (" 'sorted(d)' "['admitted', 'pending', 'preempted']" schedule -f "$G/input.yaml"
expect_line "$TMP/schedule.default" "USAGE"

# plan, and its ResourceSlices (json and yaml only)
every_output plan "box" 'len(d["nodes"]) >= 1' "True" plan -f examples/fleet/
expect_rc 0 "$FATIA" plan -f examples/fleet/ --resourceslices -o json
cp "$TMP/out" "$TMP/rs.json"
q "$TMP/rs.json" 'sorted({x["kind"] for x in (d["items"] if "items" in d else d)})' "['ResourceSlice']"
expect_rc 0 "$FATIA" plan -f examples/fleet/ --resourceslices -o yaml
same_doc "$TMP/rs.json" "$TMP/out" "plan --resourceslices"

# export gpu-operator: yaml (default) and json; a table is refused
expect_rc 0 "$FATIA" export gpu-operator
cp "$TMP/out" "$TMP/export.default"
expect_line "$TMP/out" "name: fatia-device-plugin-config"
expect_rc 0 "$FATIA" export gpu-operator -o yaml
cmp -s "$TMP/out" "$TMP/export.default" || fail "export: -o yaml is not the default"
expect_rc 0 "$FATIA" export gpu-operator -o json
python3 -c '
import json, sys, yaml
j = json.load(open(sys.argv[1]))
docs = [d for d in (j["devicePlugin"], j["migParted"]) if d] + j["fleet"]
y = [d for d in yaml.safe_load_all(open(sys.argv[2])) if d is not None]
names = lambda ds: sorted((d["kind"], d["metadata"]["name"]) for d in ds)
sys.exit(0 if names(docs) == names(y) and ("ConfigMap", "fatia-device-plugin-config") in names(y) else 1)
' "$TMP/out" "$TMP/export.default" || fail "export: -o json does not hold the objects of -o yaml"
expect_rc 2 "$FATIA" export gpu-operator -o table
expect_line "$TMP/err" "output must be yaml or json"

# serve plan
every_output serve-plan "fits:                  yes" 'd["fits"], d["kvCacheTokens"], d["slice"]["profile"]' \
    "(True, 387616, '3g.71gb')" serve plan --model llama-3.1-8b --slice 3g.71gb
WANT_RC=1 every_output serve-nofit "fits:                  no" 'd["fits"], d["wouldFitWith"][0]["args"]' \
    "(False, '--gpu h200 --gpus 2')" serve plan --model llama-3.1-70b --gpu h200

# profiles
every_output profiles "Training (2 whole GPUs)" '[p["displayName"] for p in d["profiles"]][2]' \
    "Training (2 whole GPUs)" profiles -f examples/

# usage
every_output usage "team-a      nvidia.com/gpu           4.000000" '[(r["group"], r["hours"]) for r in d["usage"] if r["resource"] == "nvidia.com/gpu"]' \
    "[('team-a', '4.000000')]" usage -f tests/data/usage/records.yaml --now 2026-12-01T12:00:00Z

# place
every_output place "team-a/pair-leader-0   node-0   gpu-0,gpu-1" 'sorted(d), d["policy"]' "(['gpus', 'placements', 'policy'], 'binpack')" \
    place -f tests/golden/place/gang/input.yaml

# sim
D=tests/data/sim
every_output sim "policy binpack, 2 GPUs, 200 s simulated: 3 pods placed, 1 never placed" 'd["placedPods"], d["unplacedPods"]' "(3, 1)" \
    sim -f $D/fleet-2gpu.yaml --trace $D/fifo.csv

# serve bench against one engine-sim: table and json
"$FATIA" engine-sim --listen 127.0.0.1:0 --speed 50 --port-file "$TMP/eng.port" 2>"$TMP/eng.log" &
ENG=$!
trap 'kill $ENG 2>/dev/null; rm -rf "$TMP"' EXIT
for _ in $(seq 250); do [ -s "$TMP/eng.port" ] && break; sleep 0.02; done
[ -s "$TMP/eng.port" ] || fail "engine-sim did not start: $(cat "$TMP/eng.log")"
B=(serve bench --url "http://127.0.0.1:$(cat "$TMP/eng.port")" --speed 50 --rate 50 --groups 2
    --prompts-per-group 2 --system-tokens 50 --question-tokens 10 --output-tokens 3)
expect_rc 0 "$FATIA" "${B[@]}"
expect_line "$TMP/out" "bench.completed: 4 requests"
expect_rc 0 "$FATIA" "${B[@]}" -o table
expect_line "$TMP/out" "bench.completed: 4 requests"
expect_rc 0 "$FATIA" "${B[@]}" -o json
q "$TMP/out" 'd["completed"], d["failed"]' "(4, 0)"
cp "$TMP/out" "$TMP/bench.json"
expect_rc 0 "$FATIA" "${B[@]}" -o yaml
python3 -c 'import sys, yaml; d = yaml.safe_load(open(sys.argv[1])); sys.exit(not (d["completed"] == 4 and d["label"] == "bench"))' "$TMP/out" ||
    fail "serve bench -o yaml"
expect_rc 2 "$FATIA" "${B[@]}" -o xml
kill $ENG
finish
