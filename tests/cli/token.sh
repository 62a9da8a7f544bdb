# tests/cli/token.sh: `fatia token create`: the token is added to DATA_DIR/tokens, the kubeconfig
# names it, and what it writes is 0600 whatever the umask (it was world-readable under 022).
# $FATIA_DATA_DIR (the catalog's directory) is never taken for fatiad's --data-dir.
# A real fatiad accepting the token: tests/cli/apiserver-kubectl.sh.
. "$(dirname "$0")/lib.bash"
D=$TMP/data
mkdir -p "$D"
cat >"$D/kubeconfig" <<'KC'
apiVersion: v1
kind: Config
clusters:
- name: fatia
  cluster:
    server: https://127.0.0.1:6443
    certificate-authority-data: Q0E=
contexts: []
users: []
KC
mode() { stat -c %a "$1"; }
umask 022

# > FILE: the shell creates it 0644; fatia makes it 0600 before writing the token
"$FATIA" token create --user alice --namespace team-a --data-dir "$D" >"$TMP/alice.kc" 2>"$TMP/err" ||
    fail "token create > file failed: $(cat "$TMP/err")"
[ "$(mode "$TMP/alice.kc")" = 600 ] || fail "> file: mode $(mode "$TMP/alice.kc"), want 600"
expect_line "$TMP/alice.kc" 'server: "https://127.0.0.1:6443"'
expect_line "$TMP/alice.kc" 'namespace: "team-a"'
tok=$(sed -n 's/^ *token: "\{0,1\}\([0-9a-f]*\)"\{0,1\}$/\1/p' "$TMP/alice.kc")
[ "${#tok}" -ge 32 ] || fail "no token in the kubeconfig"
grep -q "$tok" "$D/tokens" || fail "the token is not in $D/tokens"
[ "$(mode "$D/tokens")" = 600 ] || fail "tokens file: mode $(mode "$D/tokens"), want 600"

# >> an existing 0644 file, and umask 000
touch "$TMP/old.kc"
chmod 644 "$TMP/old.kc"
(umask 000 && "$FATIA" token create --user bob --namespace team-b --data-dir "$D" >>"$TMP/old.kc") ||
    fail "token create >> file failed"
[ "$(mode "$TMP/old.kc")" = 600 ] || fail ">> 0644 file: mode $(mode "$TMP/old.kc"), want 600"

# --output-file: a new file, an existing 0666 one (truncated), umask 000
(umask 000 && "$FATIA" token create --user carol --namespace team-a --data-dir "$D" \
    --output-file "$TMP/carol.kc" >"$TMP/out" 2>"$TMP/err") || fail "--output-file failed: $(cat "$TMP/err")"
[ "$(mode "$TMP/carol.kc")" = 600 ] || fail "--output-file: mode $(mode "$TMP/carol.kc"), want 600"
[ -s "$TMP/out" ] && fail "--output-file also wrote to stdout"
expect_line "$TMP/carol.kc" 'name: "carol"'
printf 'old content that is much longer than nothing\n%.0s' $(seq 100) >"$TMP/wide.kc"
chmod 666 "$TMP/wide.kc"
expect_rc 0 "$FATIA" token create --user dave --namespace team-a --data-dir "$D" --output-file "$TMP/wide.kc"
[ "$(mode "$TMP/wide.kc")" = 600 ] || fail "--output-file over 0666: mode $(mode "$TMP/wide.kc")"
grep -q "old content" "$TMP/wide.kc" && fail "--output-file did not truncate"
expect_line "$TMP/wide.kc" 'name: "dave"'

# a symbolic link planted where the file goes is not followed
ln -s "$TMP/target" "$TMP/link.kc"
expect_rc 1 "$FATIA" token create --user eve --namespace team-a --data-dir "$D" --output-file "$TMP/link.kc"
expect_line "$TMP/err" "cannot create '$TMP/link.kc'"
[ -e "$TMP/target" ] && fail "--output-file followed a symbolic link"

# a file that someone else owns (planted in a shared directory) is refused, not written
if [ "$(id -u)" = 0 ]; then
    touch "$TMP/planted.kc"
    chmod 666 "$TMP/planted.kc"
    chown nobody "$TMP/planted.kc"
    "$FATIA" token create --user frank --namespace team-a --data-dir "$D" >"$TMP/planted.kc" 2>"$TMP/err" &&
        fail "wrote a token into a file owned by nobody"
    expect_line "$TMP/err" "is a file owned by uid"
    [ -s "$TMP/planted.kc" ] && fail "the planted file holds the token"
fi

# a pipe is left alone
"$FATIA" token create --user gina --namespace team-a --data-dir "$D" | grep -q 'name: "gina"' ||
    fail "token create | grep: no kubeconfig"

# FATIA_DATA_DIR is the catalog's data directory, not fatiad's: pointed at one that even holds a
# kubeconfig (which would let the token be written there), create and revoke without --data-dir
# use .fatia in the current directory and leave the catalog directory alone
CAT=$TMP/catalog
mkdir -p "$CAT/gpus" "$TMP/cwd/.fatia"
cp "$D/kubeconfig" "$CAT/kubeconfig"
cp "$D/kubeconfig" "$TMP/cwd/.fatia/kubeconfig"
(cd "$TMP/cwd" && FATIA_DATA_DIR=$CAT "$FATIA" token create --user hal --namespace team-a >"$TMP/hal.kc" 2>"$TMP/err") ||
    fail "token create with FATIA_DATA_DIR set: $(cat "$TMP/err")"
[ -e "$CAT/tokens" ] && fail "token create wrote tokens into \$FATIA_DATA_DIR (the catalog directory)"
tok=$(sed -n 's/^ *token: "\{0,1\}\([0-9a-f]*\)"\{0,1\}$/\1/p' "$TMP/hal.kc")
[ "${#tok}" -ge 32 ] && grep -q "$tok" "$TMP/cwd/.fatia/tokens" ||
    fail "with FATIA_DATA_DIR set, the token is not in ./.fatia/tokens"
# revoke: a tokens file planted in the catalog directory is not the one it edits
printf 'planted\n' >"$CAT/tokens"
(cd "$TMP/cwd" && FATIA_DATA_DIR=$CAT "$FATIA" token revoke --user hal 2>"$TMP/err") ||
    fail "token revoke with FATIA_DATA_DIR set: $(cat "$TMP/err")"
grep -q "$tok" "$TMP/cwd/.fatia/tokens" && fail "with FATIA_DATA_DIR set, revoke left hal in ./.fatia/tokens"
[ "$(cat "$CAT/tokens")" = planted ] || fail "token revoke touched \$FATIA_DATA_DIR/tokens"

# usage and errors
expect_rc 2 "$FATIA" token create --user alice --data-dir "$D"
expect_line "$TMP/err" "--user and --namespace are required"
expect_rc 2 "$FATIA" token
expect_line "$TMP/err" "expected 'create'"
expect_rc 1 "$FATIA" token create --user alice --namespace team-a --data-dir "$TMP/none"
expect_line "$TMP/err" "cannot read the server address from '$TMP/none/kubeconfig'"
expect_rc 1 "$FATIA" token create --user 'bad name' --namespace team-a --data-dir "$D"
expect_line "$TMP/err" "invalid user, group or namespace name"
expect_rc 0 "$FATIA" token --help
expect_line "$TMP/out" "--output-file FILE"
finish
