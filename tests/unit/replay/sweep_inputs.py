"""A small synthetic trace and two policies for the sweep tests (unit and Dask end-to-end):
three nodes, two dozen pods of four shapes arriving every 5 s, running 30-80 s, abandoned
40 s after arrival when still pending; the default profile and MostAllocated. Seeds and
policies give different placements, so a log returned for the wrong job shows."""

from __future__ import annotations

from pathlib import Path

from extender.replay.trace import Trace, TracePod, save

DEFAULT = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: default-scheduler
"""

MOST_ALLOCATED = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: default-scheduler
    pluginConfig:
      - name: NodeResourcesFit
        args:
          scoringStrategy:
            type: MostAllocated
            resources: [{name: cpu, weight: 1}, {name: memory, weight: 1}]
"""

# Names a plugin nobody registered: the replay fails building its profile.
BROKEN = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: default-scheduler
    plugins:
      score:
        enabled: [{name: NoSuchPlugin}]
"""


def _node(i: int) -> dict:
    resources = {"cpu": "8", "memory": "16Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": f"n-{i}", "labels": {"kubernetes.io/hostname": f"n-{i}"}},
        "status": {"allocatable": resources, "capacity": resources},
    }


def _pod(j: int) -> TracePod:
    cpu = (500, 1000, 2000, 3000)[j % 4]
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"p-{j}",
            "namespace": "default",
            "uid": f"uid-{j}",
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": f"shape-{j % 4}",
                    "uid": f"rs-{j % 4}",
                    "controller": True,
                }
            ],
        },
        "spec": {
            "schedulerName": "default-scheduler",
            "containers": [
                {
                    "name": "c",
                    "image": "x",
                    "resources": {"requests": {"cpu": f"{cpu}m", "memory": "1Gi"}},
                }
            ],
        },
    }
    arrival = 5.0 * j
    return TracePod(arrival=arrival, pod=pod, duration=30.0 + (7 * j) % 50, abandon=arrival + 40.0)


def write_inputs(directory: Path) -> tuple[Path, list[Path]]:
    """The trace (``trace.json.gz``) and the two policies' files written in ``directory``."""
    trace = Trace(
        metadata={"name": "sweep-synthetic", "source": "test", "gpuMapping": "none"},
        duration=300.0,
        nodes=[_node(i) for i in range(3)],
        pods=[_pod(j) for j in range(24)],
    )
    trace_path = directory / "trace.json.gz"
    save(trace, trace_path)
    configs = []
    for name, text in (("default", DEFAULT), ("most-allocated", MOST_ALLOCATED)):
        path = directory / f"{name}.yaml"
        path.write_text(text)
        configs.append(path)
    return trace_path, configs


def without_wall_time(log: dict) -> dict:
    """A replay log less its one run-dependent field."""
    return {k: v for k, v in log.items() if k != "wall_seconds"}
