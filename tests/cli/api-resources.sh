# tests/cli/api-resources.sh: `fatia api-resources` with every -o (each once crashed: the JSON
# was packed with a format whose order did not match its arguments).
. "$(dirname "$0")/lib.bash"

expect_rc 0 "$FATIA" api-resources
expect_line "$TMP/out" "NAME"
expect_line "$TMP/out" "ALSO SERVED"
grep -qE '^clusterqueues +cq +kueue\.x-k8s\.io/v1beta2 +false +ClusterQueue +v1beta1$' "$TMP/out" ||
    fail "table: no clusterqueues row"
grep -qE '^pods +po +v1 +true +Pod +$' "$TMP/out" || fail "table: no pods row"
rows=$(($(wc -l <"$TMP/out") - 1))
[ "$rows" -ge 15 ] || fail "table: only $rows kinds"
cp "$TMP/out" "$TMP/table"

expect_rc 0 "$FATIA" api-resources -o table
cmp -s "$TMP/out" "$TMP/table" || fail "-o table differs from the default"
expect_rc 0 "$FATIA" api-resources -o wide
cmp -s "$TMP/out" "$TMP/table" || fail "-o wide differs from the table"

expect_rc 0 "$FATIA" api-resources -o json
cq=$(python3 -c '
import json, sys
kinds = json.load(open(sys.argv[1]))
print(len(kinds))
cq = [k for k in kinds if k["kind"] == "ClusterQueue"][0]
print(cq["name"], ",".join(cq["shortNames"]), cq["apiVersion"], cq["namespaced"], ",".join(cq["alsoServed"]))
' "$TMP/out") || fail "-o json: not the expected JSON"
[ "$(echo "$cq" | head -1)" = "$rows" ] || fail "-o json: $(echo "$cq" | head -1) kinds, the table $rows"
[ "$(echo "$cq" | tail -1)" = "clusterqueues cq kueue.x-k8s.io/v1beta2 False v1beta1" ] ||
    fail "-o json: ClusterQueue is: $cq"

expect_rc 0 "$FATIA" api-resources -o yaml
expect_line "$TMP/out" "- name: clusterqueues"
expect_line "$TMP/out" "  apiVersion: kueue.x-k8s.io/v1beta2"
expect_line "$TMP/out" "  namespaced: true"
[ "$(grep -c '^- name: ' "$TMP/out")" = "$rows" ] || fail "-o yaml: not $rows kinds"

expect_rc 2 "$FATIA" api-resources -o xml
expect_line "$TMP/err" "unknown output format 'xml'"
expect_rc 2 "$FATIA" api-resources extra
expect_line "$TMP/err" "unexpected argument 'extra'"
expect_rc 0 "$FATIA" api-resources --help
expect_line "$TMP/out" "Usage: fatia api-resources"
finish
