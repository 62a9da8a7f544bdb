#!/bin/bash
# tests/cli/apiserver-satoken.sh: ServiceAccount tokens (src/apiserver/satoken.c) with kubectl 1.27
# and 1.33: `kubectl create token` (TokenRequest, --duration, --audience, --bound-object-*), the
# token as a bearer token (kubectl auth whoami, can-i), and a hostile holder's attempts:
#   - the token does what RBAC binds to its ServiceAccount and nothing else;
#   - refused (401): a token for another audience; an expired token and a not-yet-valid one
#     (signed here with fatiad's own key, so only the times are wrong); a token signed with
#     another key; a token whose claims were edited (the signature no longer matches); a token
#     of a deleted ServiceAccount, also once one of the same name is made again; a token bound
#     to a deleted pod;
#   - TokenReview answers for the audience a service names, and only for those who may ask;
#   - refused (403, 422, 404): a token request without create on serviceaccounts/token (view),
#     in another namespace, under 10 minutes, bound to a missing pod or to a pod's former uid.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
find_kubectl
export HOME=$TMP/home
mkdir -p "$HOME"
D=$TMP/data
start_fatiad "$D" || { finish; exit 1; }
ADM="$KUBECTL_DIR/kubectl.1.33 --kubeconfig $KCFG"

allowed() { "$@" >"$TMP/out" 2>"$TMP/err" || fail "refused: $*: $(cat "$TMP/err")"; }
refused() { # refused WANT CMD...
    local want=$1
    shift
    if "$@" >"$TMP/out" 2>"$TMP/err"; then
        fail "ATTACK SUCCEEDED: $*"
        return
    fi
    grep -qF -- "$want" "$TMP/err" || fail "the refusal of '$*' does not say '$want': $(cat "$TMP/err")"
}

[ "$(stat -c %a "$D/sa-signing.key")" = 600 ] || fail "sa-signing.key is not 0600"
allowed $ADM create namespace team-a
allowed $ADM create namespace team-b
allowed $ADM create serviceaccount bot -n team-a
allowed $ADM create serviceaccount bot -n team-b
allowed $ADM create configmap c -n team-a --from-literal=k=v
allowed $ADM create secret generic s -n team-a --from-literal=k=v
allowed $ADM create rolebinding bot-view -n team-a --clusterrole=view --serviceaccount=team-a:bot
"$FATIA" token create --data-dir "$D" --user alice --namespace team-a >"$TMP/alice.kc" 2>/dev/null ||
    fail "token create alice"
"$FATIA" token create --data-dir "$D" --user rosa --namespace team-a --read-only >"$TMP/rosa.kc" 2>/dev/null ||
    fail "token create rosa"

# forge NAME SECONDS_FROM_NOW_NBF SECONDS_FROM_NOW_EXP [KEYFILE] [AUD]: a token with fatiad's
# claims for team-a/bot signed with KEYFILE (default: fatiad's own key)
SAUID=$($ADM get sa bot -n team-a -o jsonpath='{.metadata.uid}')
forge() {
    python3 - "$SAUID" "$1" "$2" "${3:-$D/sa-signing.key}" "${4:-https://kubernetes.default.svc.cluster.local}" <<'EOF'
import base64, hashlib, hmac, json, sys, time
uid, nbf, exp, keyfile, aud = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
b = lambda x: base64.urlsafe_b64encode(x).rstrip(b"=")
now = int(time.time())
claims = {"aud": [aud], "exp": now + exp, "iat": now + nbf, "iss": "https://kubernetes.default.svc.cluster.local",
          "jti": "forged-%d-%d" % (nbf, exp), "kubernetes.io": {"namespace": "team-a",
          "serviceaccount": {"name": "bot", "uid": uid}}, "nbf": now + nbf,
          "sub": "system:serviceaccount:team-a:bot"}
head = b(b'{"alg":"HS256","kid":"fatia","typ":"JWT"}') + b"." + b(json.dumps(claims, separators=(",", ":")).encode())
key = open(keyfile, "rb").read()
print((head + b"." + b(hmac.new(key, head, hashlib.sha256).digest())).decode())
EOF
}

for V in 1.27 1.33; do
    K=$KUBECTL_DIR/kubectl.$V
    AK="$K --kubeconfig $KCFG"
    AS() { $K --kubeconfig /dev/null --server "$URL" --certificate-authority "$CA" --token "$1" "${@:2}"; }

    T=$($AK create token bot -n team-a --duration=1h) || fail "$V: create token"
    [ "$(echo "$T" | tr -cd . | wc -c)" = 2 ] || fail "$V: not a JWT: $T"
    # the holder is the ServiceAccount
    AS "$T" auth whoami >"$TMP/who" 2>&1 || fail "$V: whoami: $(cat "$TMP/who")"
    grep -q 'system:serviceaccount:team-a:bot' "$TMP/who" || fail "$V: whoami: $(cat "$TMP/who")"
    grep -q 'system:serviceaccounts:team-a' "$TMP/who" || fail "$V: whoami groups: $(cat "$TMP/who")"
    # what view gives, and nothing else
    allowed AS "$T" -n team-a get configmap c
    allowed AS "$T" -n team-a get pods
    refused 'cannot get resource "secrets"' AS "$T" -n team-a get secret s
    refused 'cannot create resource "configmaps"' AS "$T" -n team-a create configmap x --from-literal=k=v
    refused 'in the namespace "team-b"' AS "$T" -n team-b get pods
    refused 'cannot create resource "serviceaccounts/token"' AS "$T" -n team-a create token bot
    [ "$(AS "$T" -n team-a auth can-i list pods)" = yes ] || fail "$V: can-i list pods as the token"
    [ "$(AS "$T" -n team-a auth can-i delete pods 2>/dev/null)" = no ] || fail "$V: can-i delete pods as the token"
    # another audience: a token for someone else
    T2=$($AK create token bot -n team-a --audience=https://vault.example) || fail "$V: create token --audience"
    refused Unauthorized AS "$T2" -n team-a get pods
    T2=$($AK create token bot -n team-a --audience=https://vault.example --audience=https://kubernetes.default.svc.cluster.local)
    allowed AS "$T2" -n team-a get pods
    # a tenant may make tokens in its namespace (admin has serviceaccounts/token), not elsewhere
    allowed $K --kubeconfig "$TMP/alice.kc" -n team-a create token bot
    refused 'cannot create resource "serviceaccounts/token"' $K --kubeconfig "$TMP/alice.kc" -n team-b create token bot
    refused 'cannot create resource "serviceaccounts/token"' $K --kubeconfig "$TMP/rosa.kc" -n team-a create token bot
    refused 'not found' $AK create token nope -n team-a
    refused 'may not specify a duration less than 10 minutes' $AK create token bot -n team-a --duration=5m
    # bound to a pod (one running as bot: a token binds only to a pod of its service account,
    # satoken.c): valid while the pod is, never again once it is gone
    PV=p${V/./}
    BOT='{"spec":{"serviceAccountName":"bot"}}'
    allowed $AK run "$PV" -n team-a --image=busybox --restart=Never --overrides="$BOT"
    TP=$($AK create token bot -n team-a --bound-object-kind=Pod --bound-object-name="$PV") ||
        fail "$V: create token bound to a pod"
    allowed AS "$TP" -n team-a get pods
    PUID=$($AK get pod "$PV" -n team-a -o jsonpath='{.metadata.uid}')
    allowed $AK delete pod "$PV" -n team-a --wait=false
    refused Unauthorized AS "$TP" -n team-a get pods
    allowed $AK run "$PV" -n team-a --image=busybox --restart=Never --overrides="$BOT"
    refused Unauthorized AS "$TP" -n team-a get pods # the same name, another pod
    refused 'does not match the UID in record' $AK create token bot -n team-a --bound-object-kind=Pod \
        --bound-object-name="$PV" --bound-object-uid="$PUID"
    refused 'not found' $AK create token bot -n team-a --bound-object-kind=Pod --bound-object-name=nope
    allowed $AK delete pod "$PV" -n team-a --wait=false
done

# forged and stale tokens (curl: kubectl would prompt for a password on a 401)
who() { AS_TOKEN=$1 api GET /api/v1/namespaces/team-a/configmaps; }
who "$(forge 0 3600)"
[ "$CODE" = 200 ] || fail "a well-formed token signed with fatiad's key: $CODE (the forge helper is wrong)"
who "$(forge -7200 -3600)"
[ "$CODE" = 401 ] || fail "an expired token: $CODE, want 401"
who "$(forge 3600 7200)"
[ "$CODE" = 401 ] || fail "a token not valid before an hour from now: $CODE, want 401"
head -c 32 /dev/urandom >"$TMP/other.key"
who "$(forge 0 3600 "$TMP/other.key")"
[ "$CODE" = 401 ] || fail "a token signed with another key: $CODE, want 401"
who "$(forge 0 3600 "" https://vault.example)"
[ "$CODE" = 401 ] || fail "a token of another audience: $CODE, want 401"
GOOD=$(forge 0 3600)
EDITED=$(python3 - "$GOOD" <<'EOF'
import base64, json, sys
h, p, s = sys.argv[1].split(".")
c = json.loads(base64.urlsafe_b64decode(p + "=" * (-len(p) % 4)))
c["sub"] = "system:serviceaccount:team-b:bot"
c["kubernetes.io"]["namespace"] = "team-b"
print(h + "." + base64.urlsafe_b64encode(json.dumps(c).encode()).rstrip(b"=").decode() + "." + s)
EOF
)
who "$EDITED"
[ "$CODE" = 401 ] || fail "a token whose claims were edited: $CODE, want 401"
# a signature changed in one character, and one changed only in the unused low bits of its last
# character (the same bytes decoded leniently: a second spelling of one token)
for how in flip pad; do
    BAD=$(python3 - "$GOOD" "$how" <<'EOF'
import sys
t, how = sys.argv[1], sys.argv[2]
a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
h, p, s = t.split(".")
if how == "flip":
    s = ("B" if s[0] == "A" else "A") + s[1:]
else:
    s = s[:-1] + a[a.index(s[-1]) ^ 1]
print(".".join((h, p, s)))
EOF
)
    who "$BAD"
    [ "$CODE" = 401 ] || fail "a token with a changed signature ($how): $CODE, want 401"
done
# TokenReview: a service checks a token made for it; fatiad's own audience by default; tenants may
# not ask (upstream: system:auth-delegator)
review() { # review TOKEN [AUDIENCE]: as $AS_TOKEN (default admin)
    local aud=
    [ -n "${2:-}" ] && aud=",\"audiences\":[\"$2\"]"
    api POST /apis/authentication.k8s.io/v1/tokenreviews -H 'Content-Type: application/json' \
        -d "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"TokenReview\",\"spec\":{\"token\":\"$1\"$aud}}"
}
TV=$($ADM create token bot -n team-a --audience=https://vault.example)
review "$TV" https://vault.example
[ "$CODE" = 201 ] && grep -q '"authenticated":true' "$TMP/body" && grep -q 'system:serviceaccount:team-a:bot' "$TMP/body" ||
    fail "TokenReview for the token's audience: $CODE $(cat "$TMP/body")"
review "$TV"
grep -q '"authenticated":false' "$TMP/body" || fail "TokenReview for fatiad's audience of a vault token: $(cat "$TMP/body")"
review "$(forge -7200 -3600)"
grep -q '"authenticated":false' "$TMP/body" || fail "TokenReview of an expired token: $(cat "$TMP/body")"
AS_TOKEN=$(awk '$2 == "alice" {print $1}' "$D/tokens") review "$TV" https://vault.example
[ "$CODE" = 403 ] || fail "a tenant's TokenReview: $CODE, want 403"

# the ServiceAccount goes: its tokens go with it, also when one of the same name comes back
T=$($ADM create token bot -n team-a)
allowed $ADM delete serviceaccount bot -n team-a
who "$T"
[ "$CODE" = 401 ] || fail "the token of a deleted ServiceAccount: $CODE, want 401"
allowed $ADM create serviceaccount bot -n team-a
who "$T"
[ "$CODE" = 401 ] || fail "the token of a former ServiceAccount of the same name: $CODE, want 401"
# the key survives a restart: a token made before still works
allowed $ADM create rolebinding bot-view2 -n team-a --clusterrole=view --serviceaccount=team-a:bot
T=$($ADM create token bot -n team-a)
stop_fatiad
start_fatiad "$D" || { finish; exit 1; }
who "$T"
[ "$CODE" = 200 ] || fail "a token made before a restart: $CODE, want 200"
stop_fatiad

# --service-account-signing-key-file: the replicas' shared key. It must exist and be 32 bytes
# (a replica making its own would sign tokens the others refuse); with it, the key beside the
# tokens file is not used, so the token above is refused and the file's key signs.
"$FATIAD" --data-dir "$D" --listen 127.0.0.1:0 --no-controllers \
    --service-account-signing-key-file "$TMP/none.key" >"$TMP/nokey.log" 2>&1 &&
    fail "fatiad started with a missing --service-account-signing-key-file"
grep -q "service-account-signing-key-file '$TMP/none.key'" "$TMP/nokey.log" ||
    fail "a missing key file's error: $(cat "$TMP/nokey.log")"
head -c 31 /dev/urandom >"$TMP/short.key"
"$FATIAD" --data-dir "$D" --listen 127.0.0.1:0 --no-controllers \
    --service-account-signing-key-file "$TMP/short.key" >"$TMP/short.log" 2>&1 &&
    fail "fatiad started with a 31-byte signing key"
grep -q "want exactly 32 bytes" "$TMP/short.log" || fail "a short key file's error: $(cat "$TMP/short.log")"
head -c 32 /dev/urandom >"$TMP/shared.key"
start_fatiad "$D" --service-account-signing-key-file "$TMP/shared.key" || { finish; exit 1; }
who "$T"
[ "$CODE" = 401 ] || fail "a token of the former key under --service-account-signing-key-file: $CODE, want 401"
SAUID=$($ADM get serviceaccount bot -n team-a -o jsonpath='{.metadata.uid}')
who "$(forge 0 3600 "$TMP/shared.key")"
[ "$CODE" = 200 ] || fail "a token signed with the shared key file: $CODE, want 200"
T2=$($ADM create token bot -n team-a)
who "$T2"
[ "$CODE" = 200 ] || fail "a token made under the shared key: $CODE, want 200"
stop_fatiad
finish
