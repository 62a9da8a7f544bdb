#!/bin/bash
# tests/cli/apiserver-durability-slow.sh: the crash test of the issue: fatiad killed with -9 at
# 50 random points during at least 20,000 acknowledged writes from 4 writers; an independent
# checker then finds every acknowledged write, no half-written object, no resourceVersion reused.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/fatiad.bash"
. "$(dirname "$0")/durability.bash"
need_python3
crash_test 50 20000 4
finish
