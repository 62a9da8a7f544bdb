#!/bin/bash
# tests/cli/apiserver-durability.sh: the short crash test of the fast tier: fatiad killed with
# -9 at 5 random points during at least 1,000 acknowledged writes from 4 writers; an independent
# checker then finds every acknowledged write, no half-written object, no resourceVersion reused.
# The long version (50 kills, 20,000 writes) is apiserver-durability-slow.sh.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
. "$(dirname "$0")/durability.bash"
need_python3
crash_test 5 1000 4
finish
