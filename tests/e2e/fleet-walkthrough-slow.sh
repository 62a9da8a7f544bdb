#!/bin/bash
# tests/e2e/fleet-walkthrough-slow.sh (slow tier): the README's walkthrough on the fleet of issue
# 21, tests/e2e/walkthrough.sh with FLEET=ha: the same steps and checks (admission order,
# borrowing, reclamation, priority preemption, the containers' namespaces and environment, GPU
# UUIDs, the time-slice's cap, MIG, MPS, no slice in two pods, logs and exec, final phases,
# quotas back to zero, slicecheck.py), on a three-member etcd, two control replicas electing the
# controllers' leader and three node roles (box-0, box-1, box-2: the walkthrough's box three
# times, each node role running its pods in runc containers), kubectl at either replica, and the
# leader killed with kill -9 between steps 4 and 5 (the walkthrough goes on at the other).
exec env FLEET=ha bash "$(dirname "$0")/walkthrough.sh" "$@"
