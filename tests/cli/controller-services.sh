#!/usr/bin/env bash
# tests/cli/controller-services.sh: a Service's ClusterIP and nodePorts, allocated at admission
# (src/controller/svcalloc.c) as kube-apiserver's allocators, with both kubectl versions: an
# address of 172.30.0.0/16 per Service, never two alike; a chosen address or node port in range
# and free, refused with kube's words otherwise (out of range, already allocated); headless
# (None) and ExternalName Services get none; an apply that omits them keeps them; a changed
# clusterIP is refused; NodePort Services get a port of 30000-32767 per port.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
find_kubectl
FATIAD_CONTROLLERS=1 start_fatiad "$TMP/data" --no-agent || { finish; exit 1; }
k() { "$KUBECTL_DIR/kubectl.1.33" --kubeconfig "$KCFG" "$@"; }
k27() { "$KUBECTL_DIR/kubectl.1.27" --kubeconfig "$KCFG" "$@"; }
ip_of() { k get svc "$1" -o 'jsonpath={.spec.clusterIP}' 2>/dev/null; }

k27 create service clusterip a --tcp=80:8080 >/dev/null || fail "kubectl 1.27: create service a"
k create service clusterip b --tcp=80:8080 >/dev/null || fail "kubectl 1.33: create service b"
A=$(ip_of a)
B=$(ip_of b)
case "$A" in 172.30.*) ;; *) fail "service a: clusterIP '$A' not in 172.30.0.0/16" ;; esac
case "$B" in 172.30.*) ;; *) fail "service b: clusterIP '$B' not in 172.30.0.0/16" ;; esac
[ "$A" != "$B" ] || fail "two services share $A"
[ "$(k get svc a -o 'jsonpath={.spec.clusterIPs[0]}')" = "$A" ] || fail "clusterIPs"
[ "$(k get svc a -o 'jsonpath={.spec.ipFamilies[0]}')" = IPv4 ] || fail "ipFamilies"
k27 get svc a | grep -qF "$A" || fail "kubectl 1.27 does not show the CLUSTER-IP"
for i in $(seq 20); do k create service clusterip "many-$i" --tcp=80 >/dev/null || fail "create many-$i"; done
n=$(k get svc -o 'jsonpath={range .items[*]}{.spec.clusterIP}{"\n"}{end}' | sort | uniq -d | wc -l)
[ "$n" = 0 ] || fail "$n addresses given twice"

mk() { # NAME CLUSTERIP [TYPE] [NODEPORT]
    cat >"$TMP/$1.yaml" <<EOF
apiVersion: v1
kind: Service
metadata: {name: $1}
spec:
  type: ${3:-ClusterIP}
  ${2:+clusterIP: "$2"}
  selector: {app: $1}
  ports: [{port: 80, targetPort: 8080${4:+, nodePort: $4}}]
EOF
}
mk fixed 172.30.200.7
k apply -f "$TMP/fixed.yaml" >/dev/null || fail "a chosen free address"
[ "$(ip_of fixed)" = 172.30.200.7 ] || fail "fixed: $(ip_of fixed)"
mk dup 172.30.200.7
k apply -f "$TMP/dup.yaml" >/dev/null 2>"$TMP/err" && fail "a taken address was accepted"
grep -qF 'provided IP is already allocated' "$TMP/err" || fail "taken: $(cat "$TMP/err")"
mk outside 10.0.0.5
k apply -f "$TMP/outside.yaml" >/dev/null 2>"$TMP/err" && fail "an address out of range was accepted"
grep -qF 'provided IP is not in the valid range. The range of valid IPs is 172.30.0.0/16' "$TMP/err" ||
    fail "out of range: $(cat "$TMP/err")"
mk headless None
k apply -f "$TMP/headless.yaml" >/dev/null || fail "headless"
[ "$(ip_of headless)" = None ] || fail "headless: $(ip_of headless)"

# an apply of the manifest without clusterIP keeps it; a changed one is refused
mk kept ""
k apply -f "$TMP/kept.yaml" >/dev/null || fail "apply kept"
KEPT=$(ip_of kept)
k apply -f "$TMP/kept.yaml" >/dev/null || fail "apply kept again"
k27 apply -f "$TMP/kept.yaml" >/dev/null || fail "kubectl 1.27: apply kept again"
[ "$(ip_of kept)" = "$KEPT" ] || fail "the address changed on apply: $KEPT -> $(ip_of kept)"
k patch svc kept --type merge -p '{"spec":{"clusterIP":"172.30.201.1","clusterIPs":["172.30.201.1"]}}' >/dev/null 2>"$TMP/err" &&
    fail "a changed clusterIP was accepted"
grep -qF 'may not change once set' "$TMP/err" || fail "immutable: $(cat "$TMP/err")"

# NodePort
k27 create service nodeport np --tcp=80:8080 >/dev/null || fail "kubectl 1.27: create nodeport"
NP=$(k get svc np -o 'jsonpath={.spec.ports[0].nodePort}')
[ "$NP" -ge 30000 ] && [ "$NP" -le 32767 ] || fail "nodePort $NP"
[ -n "$(ip_of np)" ] || fail "a NodePort service has no clusterIP"
mk np2 "" NodePort "$NP"
k apply -f "$TMP/np2.yaml" >/dev/null 2>"$TMP/err" && fail "a taken nodePort was accepted"
grep -qF 'provided port is already allocated' "$TMP/err" || fail "taken port: $(cat "$TMP/err")"
mk np3 "" NodePort 8080
k apply -f "$TMP/np3.yaml" >/dev/null 2>"$TMP/err" && fail "a nodePort out of range was accepted"
grep -qF 'provided port is not in the valid range. The range of valid ports is 30000-32767' "$TMP/err" ||
    fail "port range: $(cat "$TMP/err")"
k label svc np extra=1 >/dev/null || fail "label np"
[ "$(k get svc np -o 'jsonpath={.spec.ports[0].nodePort}')" = "$NP" ] || fail "the nodePort changed on update"

# ExternalName
k create service externalname ext --external-name example.com >/dev/null || fail "externalname"
[ -z "$(ip_of ext)" ] || fail "an ExternalName service got $(ip_of ext)"
finish
