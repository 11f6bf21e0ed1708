"""The walk-through of docs/write-your-first-plugin.md, repeated with the mistakes a new plugin
author makes: each gives a clear one-line error naming the plugin (at load time where it can
be known then) or a failing kit test, never a traceback or a wrong answer."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest

from extender.framework import CONFIG_MAPS, PODS, Code, unresolvable
from extender.testing import (
    Cluster,
    ConfigError,
    apiserver_defaults,
    node,
    pod,
    run_plugin,
    run_profile,
)

ROOT = Path(__file__).resolve().parents[2]


# -- a wrong answer at run time: an Error naming the plugin and the point ----------------------


class Truthy:
    """Filter answers ``True`` for "fits" (a bool, not None or a Status)."""

    name = "Truthy"

    def __init__(self, args: dict, handle: object) -> None:
        pass

    def filter(self, state, pod, node_info):
        return True


class BareScore:
    """Score answers the int alone, not ``(score, status)``."""

    name = "BareScore"

    def __init__(self, args: dict, handle: object) -> None:
        pass

    def score(self, state, pod, node_info):
        return 7

    def score_extensions(self) -> None:
        return None


class Lookup:
    """Filter indexes a label that is not there."""

    name = "Lookup"

    def __init__(self, args: dict, handle: object) -> None:
        pass

    def filter(self, state, pod, node_info):
        return None if node_info.labels["zone"] else unresolvable("no zone")


CLUSTER = Cluster(nodes=[node("a"), node("b")])


def test_a_filter_returning_true_is_an_error_naming_plugin_and_point(
    caplog: pytest.LogCaptureFixture,
) -> None:
    result = run_plugin(Truthy, pod("p"), CLUSTER)
    # Logged as a plugin failure, so a failing kit test shows why in its captured log.
    assert "plugin Truthy failed at filter: returned bool True" in caplog.text
    assert result.error is not None
    assert result.error.code == Code.ERROR
    assert result.error.plugin == "Truthy"
    assert result.error.message == (
        'running "Truthy" filter plugin: returned bool True, expected None or a Status'
    )


def test_a_score_returning_an_int_is_an_error_naming_plugin_and_point() -> None:
    result = run_plugin(BareScore, pod("p"), CLUSTER)
    assert result.error is not None and result.error.plugin == "BareScore"
    assert result.error.message == (
        'running Score plugin "BareScore": returned int 7, '
        "expected a tuple (int score, Status | None)"
    )


def test_a_key_error_keeps_its_type_in_the_error() -> None:
    result = run_plugin(Lookup, pod("p"), CLUSTER)
    assert result.error is not None
    assert result.error.message == "running \"Lookup\" filter plugin: KeyError: 'zone'"


# -- a wrong signature: a config error at load, naming the plugin -----------------------------


class NoState:
    name = "NoState"

    def __init__(self, args: dict, handle: object) -> None:
        pass

    def filter(self, pod, node_info):
        return None


class OneArgConstructor:
    name = "OneArgConstructor"

    def __init__(self, args: dict) -> None:
        pass

    def filter(self, state, pod, node_info):
        return None


class ScoreOnly:
    name = "ScoreOnly"

    def __init__(self, args: dict, handle: object) -> None:
        pass

    def score(self, state, pod, node_info):
        return 0, None


class BadNormalize(BareScore):
    name = "BadNormalize"

    def score(self, state, pod, node_info):
        return 0, None

    def score_extensions(self):
        return self

    def normalize_score(self, state, scores):
        return None


class BadPreFlight:
    name = "BadPreFlight"

    def __init__(self, args: dict, handle: object) -> None:
        pass

    def filter(self, state, pod, node_info):
        return None

    def pre_bind_pre_flight(self, pod, node_name):
        return None


class InstanceValidateArgs(BareScore):
    name = "InstanceValidateArgs"

    def score(self, state, pod, node_info):
        return 0, None

    def score_extensions(self):
        return None

    def validate_args(self, args):
        return None


@pytest.mark.parametrize(
    ("cls", "message"),
    [
        (
            InstanceValidateArgs,
            "InstanceValidateArgs.validate_args(self, args): must be a classmethod taking "
            "(args); the loader calls it on the class, before any plugin is built",
        ),
        (
            BadPreFlight,
            "BadPreFlight.pre_bind_pre_flight(self, pod, node_name) does not take the arguments "
            "the runtime passes: pre_bind_pre_flight(self, state, pod, node_name)",
        ),
        (
            NoState,
            "NoState.filter(self, pod, node_info) does not take the arguments the runtime "
            "passes: filter(self, state, pod, node_info)",
        ),
        (OneArgConstructor, "OneArgConstructor(args): the constructor must take (args, handle)"),
        (ScoreOnly, "ScoreOnly defines score but not score_extensions"),
        (BadNormalize, "normalize_score(self, state, pod, scores)"),
    ],
    ids=lambda v: v.__name__ if isinstance(v, type) else "",
)
def test_a_wrong_signature_fails_at_load_naming_the_plugin(cls: type, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        run_plugin(cls, pod("p"), CLUSTER)
    text = str(caught.value)
    assert f'plugin "{cls.__name__}"' in text and message in text
    with pytest.raises(ConfigError, match=cls.__name__):
        run_profile(pod("p"), CLUSTER, plugins=[cls])


def test_right_signatures_in_every_form_load() -> None:
    class Forms:
        name = "Forms"

        def __init__(self, args, handle, extra=None):
            pass

        def filter(self, *args):
            return None

        @staticmethod
        def pre_score(state, pod, nodes):
            return None

        def score(self, state, pod, node_info, hint=None):
            return 0, None

        def score_extensions(self) -> None:
            return None

    assert run_plugin(Forms, pod("p"), CLUSTER).feasible == ["a", "b"]


# -- the kit: the apiserver's defaults and the shells' reads contract -------------------------


def test_requests_default_to_limits_as_the_apiserver_does() -> None:
    cluster = Cluster(nodes=[node("small", cpu="2"), node("big", cpu="8")])
    result = run_profile(pod("p", limits={"cpu": "3"}), cluster)
    assert result.feasible == ["big"]
    assert result.reasons("small") == ("Insufficient cpu",)


def test_an_assigned_pods_limits_count_as_its_requests() -> None:
    cluster = Cluster(
        nodes=[node("a", cpu="4")], pods=[pod("old", limits={"cpu": "3"}, node_name="a")]
    )
    result = run_profile(pod("new", cpu="2"), cluster)
    assert result.fit_error == "0/1 nodes are available: 1 Insufficient cpu."


def test_apiserver_defaults_containers_init_containers_and_pod_level() -> None:
    given = {
        "metadata": {"name": "p"},
        "spec": {
            "containers": [
                {"name": "a", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}},
                {"name": "b", "resources": {"requests": {"cpu": "250m"}, "limits": {"cpu": "2"}}},
                {"name": "c"},
            ],
            "initContainers": [{"name": "i", "resources": {"limits": {"memory": "3Gi"}}}],
        },
    }
    out = apiserver_defaults(given)
    containers = out["spec"]["containers"]
    assert containers[0]["resources"]["requests"] == {"cpu": "1", "memory": "1Gi"}
    assert containers[1]["resources"]["requests"] == {"cpu": "250m"}  # set requests stay
    assert "resources" not in containers[2]
    assert out["spec"]["initContainers"][0]["resources"]["requests"] == {"memory": "3Gi"}
    assert "requests" not in given["spec"]["containers"][0]["resources"]  # never mutated
    plain = pod("q", cpu="1")
    assert apiserver_defaults(plain) is plain

    pod_level = {
        "spec": {
            "resources": {"limits": {"cpu": "4", "memory": "4Gi"}},
            "containers": [{"name": "a", "resources": {"requests": {"cpu": "500m"}}}],
        }
    }
    # cpu: the containers' aggregate request; memory (no container asks): the pod's limit.
    assert apiserver_defaults(pod_level)["spec"]["resources"]["requests"] == {
        "cpu": "500m",
        "memory": "4Gi",
    }


class CountsPods:
    """Score = pods on the node (fewer is better), reading node_info.pods; ``reads`` set by
    the subclasses."""

    name = "CountsPods"

    def __init__(self, args: dict, handle: object) -> None:
        pass

    def score(self, state, pod, node_info):
        return max(0, 100 - 10 * len(node_info.pods)), None

    def score_extensions(self) -> None:
        return None


class DeclaresPods(CountsPods):
    reads = (PODS,)


PACKED = Cluster(
    nodes=[node("busy"), node("idle")],
    pods=[pod(f"w{i}", node_name="busy") for i in range(3)],
)


def test_a_plugin_reading_pods_without_declaring_them_sees_none_as_behind_kube_scheduler() -> None:
    with pytest.warns(UserWarning, match=r"declares reads=\(PODS,\)"):
        result = run_plugin(CountsPods, pod("p"), PACKED)
    # The extender does not watch pods for it: both nodes look empty, a tie.
    assert result.chosen == ["busy", "idle"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        declared = run_plugin(DeclaresPods, pod("p"), PACKED)
    assert declared.chosen == ["idle"]
    assert declared.score("busy", "CountsPods") == 70


class ReadsConfigMaps:
    name = "ReadsConfigMaps"

    def __init__(self, args: dict, handle) -> None:
        self.handle = handle

    def filter(self, state, pod, node_info):
        from extender.framework import SERVICES

        if self.handle.lister(SERVICES).list():
            return unresolvable("saw an undeclared kind")
        if not self.handle.lister(CONFIG_MAPS).list():
            return unresolvable("no configmap")
        if self.handle.namespace_labels("default") is not None:
            return unresolvable("saw namespaces undeclared")
        return None


ReadsConfigMaps.reads = (CONFIG_MAPS,)  # type: ignore[attr-defined]


def test_listers_answer_only_for_declared_kinds() -> None:
    cluster = Cluster(
        nodes=[node("a")],
        objects={
            "configmaps": [{"kind": "ConfigMap", "metadata": {"name": "c", "namespace": "x"}}],
            "services": [{"kind": "Service", "metadata": {"name": "s", "namespace": "x"}}],
            "namespaces": [{"kind": "Namespace", "metadata": {"name": "default"}}],
        },
    )
    assert run_plugin(ReadsConfigMaps, pod("p"), cluster).feasible == ["a"]


# -- the commands: one line, exit 2, no traceback ---------------------------------------------

RAISING = textwrap.dedent(
    """
    class InPool:
        name = "InPool"

        def __init__(self, args, handle):
            raise ValueError("no pool label configured")

        def filter(self, state, pod, node_info):
            return None
    """
)

NO_STATE = textwrap.dedent(
    """
    class InPool:
        name = "InPool"

        def __init__(self, args, handle):
            pass

        def filter(self, pod, node):
            return None
    """
)

CONFIG = textwrap.dedent(
    """
    apiVersion: kubescheduler.config.k8s.io/v1
    kind: KubeSchedulerConfiguration
    profiles:
      - schedulerName: needs-pool
        plugins:
          multiPoint:
            disabled: [{name: "*"}]
          queueSort: {enabled: [{name: PrioritySort}]}
          filter: {enabled: [{name: InPool}]}
          bind: {enabled: [{name: DefaultBinder}]}
    ---
    apiVersion: kube-extender.io/v1alpha1
    kind: ExtenderConfiguration
    pluginModules: ["in_pool.py:InPool"]
    """
)

# A kubeconfig whose server nobody listens on: `run` gets as far as building its frameworks.
KUBECONFIG = textwrap.dedent(
    """
    apiVersion: v1
    kind: Config
    clusters: [{name: c, cluster: {server: "http://127.0.0.1:9"}}]
    users: [{name: u, user: {token: t}}]
    contexts: [{name: c, context: {cluster: c, user: u}}]
    current-context: c
    """
)


def _project(tmp_path: Path, plugin: str) -> Path:
    (tmp_path / "in_pool.py").write_text(plugin)
    (tmp_path / "config.yaml").write_text(CONFIG)
    (tmp_path / "kubeconfig").write_text(KUBECONFIG)
    (tmp_path / "dump.yaml").write_text(
        "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n"
        "status: {allocatable: {cpu: '4', memory: 8Gi, pods: '110'}}\n"
    )
    (tmp_path / "pods.yaml").write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n"
        "spec: {schedulerName: needs-pool, containers: [{name: c, image: x}]}\n"
    )
    return tmp_path


COMMANDS = {
    "serve": "serve --config config.yaml --offline --bind 127.0.0.1:18977 --health-bind off",
    "run": "run --config config.yaml --kubeconfig kubeconfig --metrics-bind 127.0.0.1:18978",
    "simulate": "simulate --cluster dump.yaml --pods pods.yaml --config config.yaml",
}


def _kube_extender(cwd: Path, argv: list[str]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("KUBECONFIG", None)
    return subprocess.run(
        [sys.executable, "-m", "extender", *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_raising_constructor_is_one_line_and_exit_2(tmp_path: Path, command: str) -> None:
    done = _kube_extender(_project(tmp_path, RAISING), COMMANDS[command].split())
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "gunicorn" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"kube-extender {command}: ")
    assert "plugin 'InPool' failed to start: ValueError: no pool label configured" in lines[0]


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_wrong_signature_is_one_line_and_exit_2(tmp_path: Path, command: str) -> None:
    done = _kube_extender(_project(tmp_path, NO_STATE), COMMANDS[command].split())
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert 'plugin "InPool"' in lines[0]
    assert "InPool.filter(self, pod, node) does not take the arguments" in lines[0]


def test_events_to_register_with_bare_events_falls_back_to_every_event() -> None:
    """A bare ClusterEvent (no ClusterEventWithHint around it) would break the queue's
    matching: it is an Error naming the plugin, and the plugin registers for every event."""
    from extender.framework import (
        ActionType,
        ClusterEvent,
        EventResource,
        Framework,
        PluginSpec,
        Profile,
        Registry,
    )

    class BareEvents(Truthy):
        name = "BareEvents"

        def events_to_register(self):
            return [ClusterEvent(EventResource.NODE, ActionType.ADD)]

    fwk = Framework(
        Profile("p", {"filter": [PluginSpec("BareEvents")]}), Registry({"BareEvents": BareEvents})
    )
    [registered] = fwk.events_to_register()["BareEvents"]
    assert registered.event.resource == EventResource.WILDCARD
    assert registered.event.action == ActionType.ALL
