"""The seed's scenario: nine unschedulable nodes; pod1 waits until node10 appears.

From mini-kube-scheduler: with every node cordoned the pod stays Pending, and the scheduler
says why; adding a schedulable node10 is a Node/Add event that requeues pod1, which then lands
on node10.
"""


def scenario(kube):
    for i in range(1, 10):
        kube.create_node(f"node{i}", unschedulable=True)
    kube.create_pod("pod1")
    why = kube.expect_pending("pod1", seconds=3)
    kube.out(f"  pod1 is pending while every node is cordoned: {why}")
    kube.create_node("node10")
    node = kube.wait_bound("pod1", timeout=30)
    assert node == "node10", node
    kube.report()
