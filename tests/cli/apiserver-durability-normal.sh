#!/bin/bash
# tests/cli/apiserver-durability-normal.sh: the short crash test with fatiad --sync normal (no
# fsync per commit): kill -9 of the process must still lose no acknowledged write, since what
# was written is in the kernel's page cache (docs/apiserver.md, "Durability").
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
. "$(dirname "$0")/durability.bash"
need_python3
CRASH_FATIAD_ARGS="--sync normal" crash_test 5 1000 4
finish
