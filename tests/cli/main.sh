# tests/cli/main.sh: the `fatia` command itself: help, version, every subcommand's help, usage
# errors, and "did you mean" for a mistyped command.
. "$(dirname "$0")/lib.bash"
CMDS="validate api-resources schedule plan export token backup restore serve engine-sim gateway profiles place sim usage image"

expect_rc 0 "$FATIA" --help
for c in $CMDS; do
    grep -qE "^  $c +[A-Za-z]" "$TMP/out" || fail "--help does not list $c"
done
[ "$(grep -cE '^  [a-z-]+ +[A-Za-z]' "$TMP/out")" = 16 ] || fail "--help: not 16 commands"
cp "$TMP/out" "$TMP/help"
expect_rc 0 "$FATIA" help
cmp -s "$TMP/out" "$TMP/help" || fail "'fatia help' differs from --help"
expect_rc 0 "$FATIA" --version
grep -qE '^fatia [0-9]+\.[0-9]+' "$TMP/out" || fail "--version: $(cat "$TMP/out")"
expect_rc 2 "$FATIA"
expect_line "$TMP/err" "Usage: fatia [-v] COMMAND"
expect_rc 2 "$FATIA" --bogus
expect_line "$TMP/err" "fatia: unknown option '--bogus'"

for c in $CMDS; do
    expect_rc 0 "$FATIA" "$c" --help
    expect_line "$TMP/out" "Usage: fatia $c"
    cp "$TMP/out" "$TMP/h-$c"
    expect_rc 0 "$FATIA" help "$c"
    cmp -s "$TMP/out" "$TMP/h-$c" || fail "'fatia help $c' differs from '$c --help'"
    expect_rc 2 "$FATIA" "$c" --no-such-option
    expect_line "$TMP/err" "Try 'fatia $c --help'."
done

# did you mean
for pair in pln:plan paln:plan plna:plan sched:schedule simm:sim validat:validate \
    apiresources:api-resources api:api-resources sevre:serve tokne:token gatway:gateway \
    profile:profiles engine:engine-sim; do
    expect_rc 2 "$FATIA" "${pair%%:*}"
    expect_line "$TMP/err" "fatia: unknown command '${pair%%:*}': did you mean '${pair#*:}'?"
done
expect_rc 2 "$FATIA" help pln
expect_line "$TMP/err" "did you mean 'plan'?"
# nothing near: no suggestion, the list of commands
for w in xy zzzzzz kubectl; do
    expect_rc 2 "$FATIA" "$w"
    grep -q "did you mean" "$TMP/err" && fail "'$w' got a suggestion: $(cat "$TMP/err")"
    expect_line "$TMP/err" "fatia: unknown command '$w'"
    expect_line "$TMP/err" "Commands:"
done
expect_rc 2 "$FATIA" serve pln
expect_line "$TMP/err" "fatia serve: unknown subcommand 'pln': did you mean 'plan'?"
expect_rc 2 "$FATIA" serve bnch
expect_line "$TMP/err" "did you mean 'bench'?"
expect_rc 2 "$FATIA" serve xyz
expect_line "$TMP/err" "unknown subcommand 'xyz': expected plan or bench"
expect_rc 2 "$FATIA" token craete
expect_line "$TMP/err" "fatia token: unknown subcommand 'craete': did you mean 'create'?"
finish
