"""Permit: NodeNumber makes a pod wait on node3 for three seconds before it is bound.

Needs a standalone profile that enables NodeNumber (``plugins: {multiPoint: {enabled: [{name:
NodeNumber}]}}`` added to examples/standalone.yaml); kube-scheduler's extender path has no
Permit stage of ours.
"""

import time


def scenario(kube):
    kube.create_node("node3")
    start = time.monotonic()
    kube.create_pod("pod3")
    node = kube.wait_bound("pod3", timeout=20)
    waited = time.monotonic() - start
    assert node == "node3", node
    assert waited >= 3, f"bound after {waited:.1f}s, expected a 3 s permit wait"
    kube.out(f"  pod3 waited {waited:.1f}s at Permit before binding")
    kube.report()
