#!/usr/bin/env python3
# tests/e2e/jobsonce.py JOBS.json PODS.json N PREFIX...: every Job whose name starts with one of
# the PREFIX- (there must be N of them, from `kubectl get jobs -o json`) succeeded once and never
# failed, and each has exactly one pod (`kubectl get pods -o json`, by the job-name label): no Job
# ran twice across a leader's change (fleet-leader.sh, fleet-fence.sh, fleet-stepdown.sh).
import collections, json, sys


def ours(name, prefixes):
    return any(name.startswith(p + "-") for p in prefixes)


def main():
    jobs_path, pods_path, want, prefixes = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
    jobs = [j for j in json.load(open(jobs_path))["items"] if ours(j["metadata"]["name"], prefixes)]
    assert len(jobs) == want, ("jobs", len(jobs), "want", want)
    for j in jobs:
        st = j.get("status", {})
        assert st.get("succeeded") == 1 and not st.get("failed"), (j["metadata"]["name"], st)
    pods = collections.Counter()
    for p in json.load(open(pods_path))["items"]:
        n = p["metadata"].get("labels", {}).get("batch.kubernetes.io/job-name", "")
        if ours(n, prefixes):
            pods[n] += 1
    twice = {n: c for n, c in pods.items() if c != 1}
    assert not twice and len(pods) == len(jobs), ("pods per job", twice, len(pods))
    print("jobs: %d complete, one pod each" % len(jobs))


if __name__ == "__main__":
    main()
