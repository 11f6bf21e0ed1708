"""extender.config: defaults, upstream plugin merging, plugin args, and error messages.

Every error test asserts that the message names the file and the field path.
"""

from __future__ import annotations

import textwrap

import pytest

from extender.config import (
    ConfigError,
    ExtenderSettings,
    SchedulerConfig,
    default_config,
    default_profile,
    load,
    loads,
    plugin_points,
    profiles,
)
from extender.framework.profile import PluginSpec, Profile
from extender.plugins import IN_TREE_PLUGINS

SOURCE = "scheduler.yaml"
HEADER = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
EXTENDER_HEADER = "---\napiVersion: kube-extender.io/v1alpha1\nkind: ExtenderConfiguration\n"


def parse(body: str = "", extra: str = "") -> SchedulerConfig:
    return loads(HEADER + textwrap.dedent(body) + textwrap.dedent(extra), source=SOURCE)


def parse_error(body: str = "", extra: str = "") -> str:
    with pytest.raises(ConfigError) as info:
        parse(body, extra)
    return str(info.value)


def names(profile: Profile, point: str) -> list[str]:
    return profile.enabled(point)


def weights(profile: Profile) -> dict[str, int]:
    return {spec.name: spec.weight for spec in profile.plugins["score"]}


def profile_with(plugins: str) -> Profile:
    body = "profiles:\n  - schedulerName: p\n    plugins:\n" + textwrap.indent(
        textwrap.dedent(plugins), "      "
    )
    return loads(HEADER + body, source=SOURCE).profiles[0]


DEFAULT_FILTER = [
    "NodeUnschedulable",
    "NodeName",
    "TaintToleration",
    "NodeAffinity",
    "NodePorts",
    "NodeResourcesFit",
    "VolumeRestrictions",
    "NodeVolumeLimits",
    "VolumeBinding",
    "VolumeZone",
    "PodTopologySpread",
    "InterPodAffinity",
    "DynamicResources",
    "NodeDeclaredFeatures",
]
DEFAULT_PRE_FILTER = [
    "NodeAffinity",
    "NodePorts",
    "NodeResourcesFit",
    "VolumeRestrictions",
    "NodeVolumeLimits",
    "VolumeBinding",
    "VolumeZone",
    "PodTopologySpread",
    "InterPodAffinity",
    "DynamicResources",
    "NodeDeclaredFeatures",
]
DEFAULT_PRE_SCORE = [
    "TaintToleration",
    "NodeAffinity",
    "NodeResourcesFit",
    "VolumeBinding",
    "PodTopologySpread",
    "InterPodAffinity",
    "NodeResourcesBalancedAllocation",
]
DEFAULT_SCORE = [
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodeResourcesFit", 1),
    ("VolumeBinding", 1),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("DynamicResources", 2),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
]


# -- defaults --------------------------------------------------------------------------------


def test_default_profile_points_order_and_weights() -> None:
    profile = default_profile()
    assert profile.scheduler_name == "kube-extender"
    # DefaultPreemption holds a preemptor while its async preemption runs (v1.36 default).
    assert names(profile, "preEnqueue") == [
        "SchedulingGates",
        "DynamicResources",
        "DefaultPreemption",
    ]
    assert names(profile, "queueSort") == ["PrioritySort"]
    assert names(profile, "preFilter") == DEFAULT_PRE_FILTER
    assert names(profile, "filter") == DEFAULT_FILTER
    assert names(profile, "postFilter") == ["DynamicResources", "DefaultPreemption"]
    assert names(profile, "preScore") == DEFAULT_PRE_SCORE
    assert [(s.name, s.weight) for s in profile.plugins["score"]] == DEFAULT_SCORE
    assert names(profile, "bind") == ["DefaultBinder"]
    assert names(profile, "reserve") == ["VolumeBinding", "DynamicResources"]
    assert names(profile, "preBind") == ["VolumeBinding", "DynamicResources"]
    for point in ("permit", "postBind"):
        assert names(profile, point) == []
    # NodeNumber is registered but opt-in.
    assert all("NodeNumber" not in names(profile, point) for point in profile.plugins)
    assert profile.percentage_of_nodes_to_score is None


def test_default_profile_plugin_args() -> None:
    args = default_profile().plugin_config
    resources = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
    assert args["NodeResourcesFit"] == {
        "ignoredResources": [],
        "ignoredResourceGroups": [],
        "scoringStrategy": {"type": "LeastAllocated", "resources": resources},
    }
    assert args["NodeResourcesBalancedAllocation"] == {"resources": resources}
    assert args["PodTopologySpread"] == {"defaultingType": "System", "defaultConstraints": []}
    assert args["InterPodAffinity"] == {
        "hardPodAffinityWeight": 1,
        "ignorePreferredTermsOfExistingPods": False,
    }
    assert args["DefaultPreemption"] == {
        "minCandidateNodesPercentage": 10,
        "minCandidateNodesAbsolute": 100,
    }
    # Plugins without an args type get no entry.
    assert "PrioritySort" not in args and "TaintToleration" not in args


def test_default_profiles_do_not_share_mutable_state() -> None:
    first = default_profile()
    first.plugin_config["NodeResourcesFit"]["scoringStrategy"]["resources"].clear()
    first.plugins["filter"].clear()
    second = default_profile()
    assert second.plugin_config["NodeResourcesFit"]["scoringStrategy"]["resources"]
    assert names(second, "filter") == DEFAULT_FILTER


def test_default_config_top_level_defaults() -> None:
    config = default_config("mine")
    assert [p.scheduler_name for p in config.profiles] == ["mine"]
    assert config.extenders == []
    assert config.percentage_of_nodes_to_score is None
    assert config.pod_initial_backoff_seconds == 1
    assert config.pod_max_backoff_seconds == 10
    assert config.parallelism == 16
    assert config.client_connection["qps"] == 50
    assert config.client_connection["burst"] == 100
    assert config.leader_election == {
        "leaderElect": True,
        "leaseDuration": 15.0,
        "renewDeadline": 10.0,
        "retryPeriod": 2.0,
        "resourceLock": "leases",
        "resourceName": "kube-extender",
        "resourceNamespace": "kube-system",
    }
    assert config.extender == ExtenderSettings(profile="mine")
    assert config.extender.max_request_bytes == 32 * 1024 * 1024
    # Fits a 512 Mi container: docs/extender.md#memory.


def test_no_profiles_gives_upstream_default_scheduler() -> None:
    config = parse()
    assert [p.scheduler_name for p in config.profiles] == ["default-scheduler"]
    assert names(config.profiles[0], "filter") == DEFAULT_FILTER
    assert config.extender.profile == "default-scheduler"
    assert config.source == SOURCE


def test_lone_profile_without_name_is_default_scheduler() -> None:
    config = parse("profiles:\n  - percentageOfNodesToScore: 30\n")
    assert config.profiles[0].scheduler_name == "default-scheduler"
    assert config.profiles[0].percentage_of_nodes_to_score == 30


def test_percentage_of_nodes_to_score_profile_overrides_global() -> None:
    config = parse(
        """\
        percentageOfNodesToScore: 40
        profiles:
          - schedulerName: a
          - schedulerName: b
            percentageOfNodesToScore: 0
        """
    )
    assert config.percentage_of_nodes_to_score == 40
    assert [p.percentage_of_nodes_to_score for p in config.profiles] == [40, 0]


def test_top_level_fields_and_durations() -> None:
    config = parse(
        """\
        parallelism: 4
        podInitialBackoffSeconds: 2
        podMaxBackoffSeconds: 30
        clientConnection: {qps: 5, burst: 10, kubeconfig: /k}
        leaderElection:
          leaderElect: true
          leaseDuration: 1m30s
          renewDeadline: 500ms
          retryPeriod: 100ms
          resourceName: kube-extender
        """
    )
    assert config.parallelism == 4
    assert (config.pod_initial_backoff_seconds, config.pod_max_backoff_seconds) == (2.0, 30.0)
    assert config.client_connection["qps"] == 5.0
    assert config.client_connection["burst"] == 10
    assert config.client_connection["kubeconfig"] == "/k"
    election = config.leader_election
    assert election["leaseDuration"] == 90.0
    assert election["renewDeadline"] == pytest.approx(0.5)
    assert election["retryPeriod"] == pytest.approx(0.1)
    assert election["resourceName"] == "kube-extender"
    assert election["resourceNamespace"] == "kube-system"


# -- plugin merging --------------------------------------------------------------------------


def test_multi_point_enables_plugin_at_every_point_it_implements() -> None:
    profile = profile_with(
        """\
        multiPoint:
          enabled:
            - {name: NodeNumber, weight: 7}
        """
    )
    # Appended after the defaults, at preScore, score and permit only.
    assert names(profile, "preScore") == [*DEFAULT_PRE_SCORE, "NodeNumber"]
    assert [(s.name, s.weight) for s in profile.plugins["score"]] == [
        *DEFAULT_SCORE,
        ("NodeNumber", 7),
    ]
    assert names(profile, "permit") == ["NodeNumber"]
    assert names(profile, "filter") == DEFAULT_FILTER
    assert profile.plugin_config["NodeNumber"] == {"permitTimeoutSeconds": 10}


def test_multi_point_reenabled_default_keeps_position_and_takes_weight() -> None:
    profile = profile_with(
        """\
        multiPoint:
          enabled:
            - {name: ImageLocality, weight: 10}
            - {name: TaintToleration}
        """
    )
    assert names(profile, "score") == [name for name, _ in DEFAULT_SCORE]
    # The user's entry replaces the default one: no weight means 0, which means 1.
    assert weights(profile)["ImageLocality"] == 10
    assert weights(profile)["TaintToleration"] == 1
    assert weights(profile)["NodeAffinity"] == 2


def test_multi_point_disable_default_removes_it_everywhere() -> None:
    profile = profile_with(
        """\
        multiPoint:
          disabled:
            - {name: NodeAffinity}
        """
    )
    for point in ("preFilter", "filter", "preScore", "score"):
        assert "NodeAffinity" not in names(profile, point)
    assert "NodeAffinity" not in profile.plugin_config
    assert names(profile, "filter") == [n for n in DEFAULT_FILTER if n != "NodeAffinity"]


def test_multi_point_disable_all_then_explicit_points() -> None:
    profile = profile_with(
        """\
        multiPoint:
          disabled: [{name: "*"}]
          enabled: [{name: NodeName}]
        queueSort: {enabled: [{name: PrioritySort}]}
        score: {enabled: [{name: ImageLocality, weight: 4}]}
        """
    )
    assert names(profile, "filter") == ["NodeName"]
    assert names(profile, "queueSort") == ["PrioritySort"]
    assert [(s.name, s.weight) for s in profile.plugins["score"]] == [("ImageLocality", 4)]
    assert names(profile, "preFilter") == []
    assert names(profile, "bind") == []
    assert set(profile.plugin_config) == set()


def test_per_point_disable_of_a_default_keeps_it_at_other_points() -> None:
    profile = profile_with(
        """\
        filter:
          disabled: [{name: NodePorts}]
        """
    )
    assert names(profile, "filter") == [n for n in DEFAULT_FILTER if n != "NodePorts"]
    assert "NodePorts" in names(profile, "preFilter")


def test_per_point_disable_all_keeps_only_the_points_own_entries() -> None:
    profile = profile_with(
        """\
        score:
          disabled: [{name: "*"}]
          enabled: [{name: NodeNumber, weight: 3}]
        """
    )
    assert [(s.name, s.weight) for s in profile.plugins["score"]] == [("NodeNumber", 3)]
    # Other points keep their MultiPoint defaults; NodeNumber is only where it was named.
    assert names(profile, "preScore") == DEFAULT_PRE_SCORE
    assert names(profile, "permit") == []


def test_per_point_enable_of_multi_point_plugin_overrides_order_and_weight() -> None:
    # Upstream order: the point's entries that override MultiPoint ones first, then the
    # MultiPoint-only plugins, then the point's other entries.
    profile = profile_with(
        """\
        score:
          enabled:
            - {name: NodeNumber, weight: 2}
            - {name: ImageLocality, weight: 5}
            - {name: NodeAffinity}
        """
    )
    assert [(s.name, s.weight) for s in profile.plugins["score"]] == [
        ("ImageLocality", 5),
        # Named at score without a weight: the score entry wins, and 0 means 1 (not 2).
        ("NodeAffinity", 1),
        ("TaintToleration", 3),
        ("NodeResourcesFit", 1),
        ("VolumeBinding", 1),
        ("PodTopologySpread", 2),
        ("InterPodAffinity", 2),
        ("DynamicResources", 2),
        ("NodeResourcesBalancedAllocation", 1),
        ("NodeNumber", 2),
    ]


def test_score_weight_zero_means_one() -> None:
    profile = profile_with(
        """\
        multiPoint:
          enabled: [{name: NodeNumber, weight: 0}]
        """
    )
    assert weights(profile)["NodeNumber"] == 1


def test_point_weight_wins_over_multi_point_weight() -> None:
    profile = profile_with(
        """\
        multiPoint:
          enabled: [{name: NodeNumber, weight: 9}]
        score:
          enabled: [{name: NodeNumber, weight: 4}]
        """
    )
    assert weights(profile)["NodeNumber"] == 4
    assert names(profile, "score")[0] == "NodeNumber"  # an override: first
    assert names(profile, "permit") == ["NodeNumber"]


def test_disabling_an_upstream_plugin_we_lack_is_a_no_op() -> None:
    profile = profile_with(
        """\
        multiPoint:
          disabled: [{name: GangScheduling}]
        """
    )
    assert names(profile, "filter") == DEFAULT_FILTER


def test_profile_builds_a_framework() -> None:
    from extender.framework.runtime import Framework
    from extender.plugins import in_tree_registry

    profile = profile_with("multiPoint:\n  enabled: [{name: NodeNumber, weight: 2}]\n")
    fwk = Framework(profile, in_tree_registry())
    assert fwk.score_weights["TaintToleration"] == 3
    assert fwk.score_weights["NodeNumber"] == 2
    assert [p.name for p in fwk.filter_plugins] == DEFAULT_FILTER


# The points each in-tree plugin implements, as upstream registers them.
EXPECTED_POINTS: dict[str, frozenset[str]] = {
    "SchedulingGates": frozenset({"preEnqueue"}),
    "PrioritySort": frozenset({"queueSort"}),
    "NodeUnschedulable": frozenset({"filter"}),
    "NodeName": frozenset({"filter"}),
    "TaintToleration": frozenset({"filter", "preScore", "score"}),
    "NodeAffinity": frozenset({"preFilter", "filter", "preScore", "score"}),
    "NodePorts": frozenset({"preFilter", "filter"}),
    "NodeResourcesFit": frozenset({"preFilter", "filter", "preScore", "score"}),
    "PodTopologySpread": frozenset({"preFilter", "filter", "preScore", "score"}),
    "InterPodAffinity": frozenset({"preFilter", "filter", "preScore", "score"}),
    "DefaultPreemption": frozenset({"preEnqueue", "postFilter"}),
    "NodeResourcesBalancedAllocation": frozenset({"preScore", "score"}),
    "ImageLocality": frozenset({"score"}),
    "DefaultBinder": frozenset({"bind"}),
    "VolumeRestrictions": frozenset({"preFilter", "filter"}),
    "NodeVolumeLimits": frozenset({"preFilter", "filter"}),
    "VolumeBinding": frozenset({"preFilter", "filter", "preScore", "score", "reserve", "preBind"}),
    "VolumeZone": frozenset({"preFilter", "filter"}),
    "DynamicResources": frozenset(
        {"preEnqueue", "preFilter", "filter", "postFilter", "score", "reserve", "preBind"}
    ),
    "NodeNumber": frozenset({"preScore", "score", "permit"}),
    # scheduler-plugins (pkg/coscheduling/coscheduling.go, v0.34.7).
    "Coscheduling": frozenset({"queueSort", "preFilter", "postFilter", "reserve", "permit"}),
    "NodeDeclaredFeatures": frozenset({"preFilter", "filter"}),
    "GangScheduling": frozenset({"preEnqueue", "permit"}),
    "TopologyPlacementGenerator": frozenset({"placementGenerate"}),
    "PodGroupPodsCount": frozenset({"placementScore"}),
}


def test_in_tree_plugins_implement_their_upstream_points() -> None:
    for name in IN_TREE_PLUGINS:
        assert plugin_points(name) == EXPECTED_POINTS[name], name


# -- plugin args -----------------------------------------------------------------------------


def test_plugin_config_merges_upstream_defaults() -> None:
    config = parse(
        """\
        profiles:
          - pluginConfig:
              - name: NodeResourcesFit
                args:
                  apiVersion: kubescheduler.config.k8s.io/v1
                  kind: NodeResourcesFitArgs
                  scoringStrategy:
                    type: MostAllocated
              - name: NodeResourcesBalancedAllocation
                args:
                  resources: [{name: cpu, weight: 0}, {name: example.com/gpu, weight: 1}]
              - name: DefaultPreemption
                args: {minCandidateNodesAbsolute: 5}
              - name: PodTopologySpread
                args:
                  defaultingType: List
                  defaultConstraints:
                    - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: ScheduleAnyway}
        """
    )
    args = config.profiles[0].plugin_config
    assert args["NodeResourcesFit"] == {
        "ignoredResources": [],
        "ignoredResourceGroups": [],
        "scoringStrategy": {
            "type": "MostAllocated",
            "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}],
        },
    }
    assert args["NodeResourcesBalancedAllocation"] == {
        "resources": [{"name": "cpu", "weight": 1}, {"name": "example.com/gpu", "weight": 1}]
    }
    assert args["DefaultPreemption"] == {
        "minCandidateNodesPercentage": 10,
        "minCandidateNodesAbsolute": 5,
    }
    assert args["PodTopologySpread"]["defaultingType"] == "List"
    assert len(args["PodTopologySpread"]["defaultConstraints"]) == 1
    # Untouched plugins still get their defaults.
    assert args["InterPodAffinity"]["hardPodAffinityWeight"] == 1


def test_plugin_config_for_a_disabled_plugin_is_kept() -> None:
    config = parse(
        """\
        profiles:
          - plugins:
              multiPoint: {disabled: [{name: InterPodAffinity}]}
            pluginConfig:
              - name: InterPodAffinity
                args: {hardPodAffinityWeight: 5}
        """
    )
    assert config.profiles[0].plugin_config["InterPodAffinity"]["hardPodAffinityWeight"] == 5


# -- extenders and our own section -----------------------------------------------------------


def test_extenders_are_decoded_with_defaults() -> None:
    config = parse(
        """\
        extenders:
          - urlPrefix: http://127.0.0.1:8888
            filterVerb: filter
            prioritizeVerb: prioritize
            weight: 5
            httpTimeout: 1m30s
            nodeCacheCapable: true
            managedResources: [{name: example.com/fpga, ignoredByScheduler: true}]
          - urlPrefix: https://b
            bindVerb: bind
            enableHTTPS: true
            tlsConfig: {caFile: /ca.crt}
        """
    )
    first, second = config.extenders
    assert first["urlPrefix"] == "http://127.0.0.1:8888"
    assert first["httpTimeout"] == 90.0
    assert first["weight"] == 5
    assert first["managedResources"] == [{"name": "example.com/fpga", "ignoredByScheduler": True}]
    assert first["bindVerb"] == "" and first["ignorable"] is False
    assert second["httpTimeout"] == 0.0
    assert second["tlsConfig"]["caFile"] == "/ca.crt"
    assert second["tlsConfig"]["insecure"] is False


def test_extender_configuration_document() -> None:
    config = parse(
        "profiles:\n  - schedulerName: a\n  - schedulerName: b\n",
        EXTENDER_HEADER
        + textwrap.dedent(
            """\
            profile: b
            urlPrefix: /ext/
            maxRequestBytes: 4096
            filterUnresolvable: false
            kubeconfig: /etc/kubeconfig
            watchPods: true
            """
        ),
    )
    assert config.extender == ExtenderSettings(
        profile="b",
        url_prefix="/ext/",
        max_request_bytes=4096,
        filter_unresolvable=False,
        kubeconfig="/etc/kubeconfig",
        watch_pods=True,
    )


def test_extender_configuration_bind_assume() -> None:
    config = parse("", EXTENDER_HEADER)
    assert (config.extender.bind_assume, config.extender.bind_assume_ttl) == (True, 30.0)
    config = parse("", EXTENDER_HEADER + "bind: {enabled: true, assume: false, assumeTTL: 2m}\n")
    settings = config.extender
    assert (settings.bind_enabled, settings.bind_assume, settings.bind_assume_ttl) == (
        True,
        False,
        120.0,
    )


def test_extender_configuration_defaults_to_first_profile() -> None:
    config = parse("profiles:\n  - schedulerName: a\n  - schedulerName: b\n", EXTENDER_HEADER)
    assert config.extender.profile == "a"
    assert config.extender.watch_pods is None
    assert config.extender.url_prefix == "/"


def test_load_reads_a_file(tmp_path) -> None:
    path = tmp_path / "scheduler.yaml"
    path.write_text(HEADER + "profiles:\n  - schedulerName: x\n")
    config = load(path)
    assert config.source == str(path)
    assert config.profiles[0].scheduler_name == "x"


# -- errors ----------------------------------------------------------------------------------


def test_error_missing_file(tmp_path) -> None:
    path = tmp_path / "nope.yaml"
    with pytest.raises(ConfigError, match=f"^{path}: no such file"):
        load(path)


def test_error_from_file_names_the_file(tmp_path) -> None:
    path = tmp_path / "scheduler.yaml"
    path.write_text(HEADER + "parallelism: 0\n")
    with pytest.raises(ConfigError) as info:
        load(path)
    assert str(info.value) == f"{path}: parallelism: must be at least 1"


def test_error_invalid_yaml() -> None:
    with pytest.raises(ConfigError) as info:
        loads("apiVersion: [\n", source=SOURCE)
    assert str(info.value).startswith(f"{SOURCE}: invalid YAML at line 2, column 1:")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", f"{SOURCE}: empty: expected a KubeSchedulerConfiguration document"),
        ("- a\n", f"{SOURCE}: expected a KubeSchedulerConfiguration mapping, got list"),
        (
            "apiVersion: kubescheduler.config.k8s.io/v1beta3\nkind: KubeSchedulerConfiguration\n",
            f'{SOURCE}: apiVersion: must be "kubescheduler.config.k8s.io/v1"',
        ),
        (
            "apiVersion: kubescheduler.config.k8s.io/v1\nkind: Policy\n",
            f'{SOURCE}: kind: must be "KubeSchedulerConfiguration"',
        ),
        ("kind: KubeSchedulerConfiguration\n", f"{SOURCE}: apiVersion: required"),
    ],
)
def test_error_document_shape(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        loads(text, source=SOURCE)
    assert str(info.value) == message


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("parallelism: '16'\n", "parallelism: must be an integer"),
        ("parallelism: 1.5\n", "parallelism: must be an integer"),
        ("podInitialBackoffSeconds: true\n", "podInitialBackoffSeconds: must be an integer"),
        ("percentageOfNodesToScore: 101\n", "percentageOfNodesToScore: must be between 0 and 100"),
        ("unknownKey: 1\n", "unknownKey: unknown field"),
        ("profiles: {}\n", "profiles: must be a list"),
        ("profiles:\n  - schedulerName: 5\n", "profiles[0].schedulerName: must be a string"),
        ("profiles:\n  - schedulername: a\n", "profiles[0].schedulername: unknown field"),
        (
            "profiles:\n  - percentageOfNodesToScore: -1\n",
            "profiles[0].percentageOfNodesToScore: must be between 0 and 100",
        ),
        (
            "profiles:\n  - plugins: {filter: [NodeName]}\n",
            "profiles[0].plugins.filter: must be a mapping",
        ),
        (
            "profiles:\n  - plugins: {Filter: {}}\n",
            "profiles[0].plugins.Filter: unknown field",
        ),
        (
            "profiles:\n  - plugins: {score: {enabled: [{name: ImageLocality, weight: '5'}]}}\n",
            "profiles[0].plugins.score.enabled[0].weight: must be an integer",
        ),
        (
            "profiles:\n  - plugins: {score: {enabled: [{weight: 5}]}}\n",
            "profiles[0].plugins.score.enabled[0].name: required",
        ),
        (
            "podInitialBackoffSeconds: 5\npodMaxBackoffSeconds: 2\n",
            "podMaxBackoffSeconds: must be greater than or equal to podInitialBackoffSeconds",
        ),
        (
            "leaderElection: {leaseDuration: 15}\n",
            "leaderElection.leaseDuration: must be a duration string such as 10s or 1m30s",
        ),
        (
            "leaderElection: {renewDeadline: 10 seconds}\n",
            "leaderElection.renewDeadline: invalid duration '10 seconds'",
        ),
        (
            "leaderElection: {retryPeriod: '2'}\n",
            "leaderElection.retryPeriod: invalid duration '2': missing unit",
        ),
        (
            "extenders:\n  - {urlPrefix: http://a, httpTimeout: 1sec}\n",
            "extenders[0].httpTimeout: invalid duration '1sec': unknown unit 'sec'",
        ),
        (
            "leaderElection: {leaseDuration: 5s}\n",
            "leaderElection.leaseDuration: must be greater than renewDeadline",
        ),
        ("leaderElection: {leaderElect: 'yes'}\n", "leaderElection.leaderElect: must be a boolean"),
        (
            "leaderElection: {resourceLock: endpoints}\n",
            'leaderElection.resourceLock: must be "leases"',
        ),
        ("clientConnection: {qps: fast}\n", "clientConnection.qps: must be a number"),
    ],
)
def test_error_schema(body: str, message: str) -> None:
    assert parse_error(body).startswith(f"{SOURCE}: {message}")


def test_error_collects_every_schema_problem() -> None:
    lines = parse_error("parallelism: x\nfoo: 1\n").splitlines()
    assert sorted(lines) == [
        f"{SOURCE}: foo: unknown field",
        f"{SOURCE}: parallelism: must be an integer",
    ]


def test_error_score_weight_out_of_range() -> None:
    message = parse_error(
        """\
        profiles:
          - plugins:
              score:
                enabled:
                  - {name: ImageLocality, weight: 5}
                  - {name: TaintToleration, weight: 101}
        """
    )
    assert message == (
        f"{SOURCE}: profiles[0].plugins.score.enabled[1].weight: must be between 1 and 100 "
        "(got 101)"
    )


def test_error_negative_multi_point_weight() -> None:
    message = parse_error(
        "profiles:\n  - plugins: {multiPoint: {enabled: [{name: NodeNumber, weight: -1}]}}\n"
    )
    assert message.startswith(
        f"{SOURCE}: profiles[0].plugins.multiPoint.enabled[0].weight: must be between 1 and 100"
    )


def test_error_unknown_plugin() -> None:
    message = parse_error(
        """\
        profiles:
          - plugins:
              filter:
                enabled: [{name: NodeName}, {name: Foo}]
        """
    )
    assert message.startswith(
        f'{SOURCE}: profiles[0].plugins.filter.enabled[1].name: unknown plugin "Foo" '
        "(registered: in-tree: Coscheduling, DefaultBinder, DefaultPreemption, "
        "DynamicResources, GangScheduling, ImageLocality, "
    )


def test_error_enabling_an_upstream_plugin_we_lack(monkeypatch: pytest.MonkeyPatch) -> None:
    # None is missing today; the check stays for the next upstream plugin.
    monkeypatch.setattr(profiles, "UPSTREAM_ONLY_PLUGINS", frozenset({"NewUpstreamPlugin"}))
    message = parse_error(
        "profiles:\n  - plugins: {multiPoint: {enabled: [{name: NewUpstreamPlugin}]}}\n"
    )
    assert message.startswith(
        f"{SOURCE}: profiles[0].plugins.multiPoint.enabled[0].name: "
        'unknown plugin "NewUpstreamPlugin"'
    )
    assert "does not implement" in message


def test_error_disabling_an_unknown_plugin() -> None:
    message = parse_error(
        "profiles:\n  - schedulerName: a\n  - schedulerName: b\n"
        "    plugins: {score: {disabled: [{name: Bogus}]}}\n"
    )
    assert (
        message == f'{SOURCE}: profiles[1].plugins.score.disabled[0].name: unknown plugin "Bogus"'
    )


def test_error_plugin_does_not_extend_point() -> None:
    message = parse_error("profiles:\n  - plugins: {filter: {enabled: [{name: ImageLocality}]}}\n")
    assert message == (
        f'{SOURCE}: profiles[0].plugins.filter.enabled[0].name: plugin "ImageLocality" '
        "does not extend filter"
    )


def test_error_plugin_enabled_twice_at_a_point() -> None:
    message = parse_error(
        "profiles:\n  - plugins: {score: {enabled: [{name: NodeNumber}, {name: NodeNumber}]}}\n"
    )
    assert message == (
        f'{SOURCE}: profiles[0].plugins.score.enabled[1].name: plugin "NodeNumber" enabled twice'
    )


def test_error_plugin_enabled_twice_in_multi_point() -> None:
    message = parse_error(
        "profiles:\n  - plugins:\n      multiPoint:\n"
        "        enabled: [{name: NodeNumber}, {name: NodeNumber}]\n"
    )
    assert message.startswith(
        f'{SOURCE}: profiles[0].plugins.multiPoint.enabled: plugin "NodeNumber" enabled twice'
    )


def test_error_two_queue_sort_plugins() -> None:
    # The only in-tree QueueSort plugin, named twice at the point.
    message = parse_error(
        "profiles:\n  - plugins:\n      queueSort:\n"
        "        enabled: [{name: PrioritySort}, {name: PrioritySort}]\n"
    )
    assert f"{SOURCE}: profiles[0].plugins.queueSort.enabled[1].name" in message


def test_error_duplicate_profile_names() -> None:
    message = parse_error("profiles:\n  - schedulerName: a\n  - schedulerName: a\n")
    assert message == f'{SOURCE}: profiles[1].schedulerName: duplicate "a" (also profiles[0])'


def test_error_unnamed_profile_among_several() -> None:
    message = parse_error("profiles:\n  - schedulerName: a\n  - percentageOfNodesToScore: 5\n")
    assert message == (
        f"{SOURCE}: profiles[1].schedulerName: required when there is more than one profile"
    )


def test_error_empty_profile_name() -> None:
    message = parse_error("profiles:\n  - schedulerName: ''\n")
    assert message == f"{SOURCE}: profiles[0].schedulerName: must not be empty"


def test_error_queue_sort_differs_between_profiles() -> None:
    message = parse_error(
        """\
        profiles:
          - schedulerName: a
          - schedulerName: b
            plugins:
              queueSort: {disabled: [{name: "*"}]}
        """
    )
    assert message.startswith(
        f"{SOURCE}: profiles[1].plugins.queueSort: must be the same for all profiles"
    )


def test_error_plugin_config_unknown_plugin() -> None:
    message = parse_error("profiles:\n  - pluginConfig:\n      - {name: Foo, args: {}}\n")
    assert message == f'{SOURCE}: profiles[0].pluginConfig[0].name: unknown plugin "Foo"'


def test_error_plugin_config_duplicate() -> None:
    message = parse_error(
        "profiles:\n  - pluginConfig:\n"
        "      - {name: InterPodAffinity}\n      - {name: InterPodAffinity}\n"
    )
    assert message == (
        f'{SOURCE}: profiles[0].pluginConfig[1].name: duplicate pluginConfig for "InterPodAffinity"'
    )


def test_error_plugin_config_unknown_arg() -> None:
    message = parse_error(
        "profiles:\n  - pluginConfig:\n"
        "      - {name: InterPodAffinity, args: {hardPodAffinityWieght: 2}}\n"
    )
    assert (
        message
        == f"{SOURCE}: profiles[0].pluginConfig[0].args.hardPodAffinityWieght: unknown field"
    )


def test_error_plugin_config_for_plugin_without_args() -> None:
    message = parse_error(
        "profiles:\n  - pluginConfig:\n      - {name: PrioritySort, args: {x: 1}}\n"
    )
    assert (
        message == f"{SOURCE}: profiles[0].pluginConfig[0].args: plugin PrioritySort takes no args"
    )


@pytest.mark.parametrize(
    ("name", "args", "detail"),
    [
        ("DefaultPreemption", "{minCandidateNodesPercentage: 200}", "minCandidateNodesPercentage"),
        ("InterPodAffinity", "{hardPodAffinityWeight: 101}", "hardPodAffinityWeight"),
        ("NodeResourcesFit", "{scoringStrategy: {type: Foo}}", "scoringStrategy.type"),
        (
            "NodeResourcesBalancedAllocation",
            "{resources: [{name: cpu, weight: 500}]}",
            "resources[0].weight",
        ),
        (
            "PodTopologySpread",
            "{defaultConstraints: [{maxSkew: 1, topologyKey: zone, "
            "whenUnsatisfiable: DoNotSchedule}]}",
            "defaultConstraints",
        ),
    ],
)
def test_error_plugin_rejects_its_args(name: str, args: str, detail: str) -> None:
    message = parse_error(f"profiles:\n  - pluginConfig:\n      - {{name: {name}, args: {args}}}\n")
    assert message.startswith(f"{SOURCE}: profiles[0].pluginConfig[0].args: ")
    assert detail in message


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("extenders:\n  - filterVerb: filter\n", "extenders[0].urlPrefix: required"),
        (
            "extenders:\n  - {urlPrefix: http://a, prioritizeVerb: prioritize}\n",
            "extenders[0].weight: must have a positive weight applied to it",
        ),
        (
            "extenders:\n  - {urlPrefix: http://a, prioritizeVerb: p, weight: -1}\n",
            "extenders[0].weight: must have a positive weight applied to it",
        ),
        (
            "extenders:\n  - {urlPrefix: http://a, bindVerb: bind}\n"
            "  - {urlPrefix: http://b, bindVerb: bind}\n",
            "extenders: found 2 extenders implementing bind",
        ),
        (
            "extenders:\n  - {urlPrefix: http://a, enableHttps: true}\n",
            "extenders[0].enableHttps: unknown field",
        ),
        (
            "extenders:\n  - {urlPrefix: http://a, httpTimeout: 5}\n",
            "extenders[0].httpTimeout: must be a duration string",
        ),
        (
            "extenders:\n  - urlPrefix: https://a\n    tlsConfig: {insecure: true, caData: eA==}\n",
            "extenders[0].tlsConfig: specifying a root certificates file with the insecure flag",
        ),
        (
            "extenders:\n  - urlPrefix: http://a\n    managedResources: [{name: fpga}]\n",
            'extenders[0].managedResources[0].name: "fpga" is an invalid extended resource name',
        ),
        (
            "extenders:\n  - urlPrefix: http://a\n"
            "    managedResources: [{name: nvidia.kubernetes.io/gpu}]\n",
            "extenders[0].managedResources[0].name: "
            '"nvidia.kubernetes.io/gpu" is an invalid extended resource name',
        ),
        (
            "extenders:\n  - urlPrefix: http://a\n"
            "    managedResources: [{name: requests.example.com/gpu}]\n",
            "extenders[0].managedResources[0].name: "
            '"requests.example.com/gpu" is an invalid extended resource name',
        ),
        (
            "extenders:\n  - urlPrefix: http://a\n"
            "    managedResources: [{name: Example.com/gpu}]\n",
            "extenders[0].managedResources[0].name: "
            '"Example.com/gpu" is an invalid extended resource name',
        ),
        (
            "extenders:\n  - urlPrefix: http://a\n    managedResources: [{name: example.com/-x}]\n",
            "extenders[0].managedResources[0].name: "
            '"example.com/-x" is an invalid extended resource name',
        ),
        (
            "extenders:\n  - urlPrefix: http://a\n    managedResources: [{name: example.com/x}]\n"
            "  - urlPrefix: http://b\n    managedResources: [{name: example.com/x}]\n",
            "extenders[1].managedResources[0].name: duplicate extender managed resource name",
        ),
    ],
)
def test_error_extenders(body: str, message: str) -> None:
    assert parse_error(body).startswith(f"{SOURCE}: {message}")


def test_valid_extended_resource_names() -> None:
    config = parse(
        "extenders:\n  - urlPrefix: http://a\n"
        "    managedResources: [{name: example.com/fpga}, {name: a.b-c.io/Gpu_1.x}]\n"
    )
    assert [m["name"] for m in config.extenders[0]["managedResources"]] == [
        "example.com/fpga",
        "a.b-c.io/Gpu_1.x",
    ]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("urlprefix: /x\n", "ExtenderConfiguration.urlprefix: unknown field"),
        ("maxRequestBytes: 10\n", "ExtenderConfiguration.maxRequestBytes: must be at least 1024"),
        ("urlPrefix: ext\n", 'ExtenderConfiguration.urlPrefix: must be a path starting with "/"'),
        ("watchPods: 1\n", "ExtenderConfiguration.watchPods: must be a boolean"),
        ("profile: nope\n", 'ExtenderConfiguration.profile: no profile named "nope"'),
        (
            "bind: {assumeTTL: 0s}\n",
            "ExtenderConfiguration.bind.assumeTTL: must be a positive duration",
        ),
        ("bind: {assumeTTL: 30}\n", "ExtenderConfiguration.bind.assumeTTL: must be a duration"),
        ("bind: {assume: 'on'}\n", "ExtenderConfiguration.bind.assume: must be a boolean"),
        ("podBudget: -1s\n", "ExtenderConfiguration.podBudget: must not be negative"),
        ("podBudget: 10\n", "ExtenderConfiguration.podBudget: must be a duration"),
    ],
)
def test_error_extender_configuration(extra: str, message: str) -> None:
    assert parse_error("", EXTENDER_HEADER + extra).startswith(f"{SOURCE}: {message}")


def test_error_extender_configuration_api_version() -> None:
    message = parse_error("", "---\napiVersion: kube-extender.io/v2\nkind: ExtenderConfiguration\n")
    assert (
        message
        == f'{SOURCE}: ExtenderConfiguration.apiVersion: must be "kube-extender.io/v1alpha1"'
    )


def test_error_second_document_of_another_kind() -> None:
    message = parse_error("", "---\napiVersion: v1\nkind: ConfigMap\n")
    assert message == (
        f"{SOURCE}: document 2: kind: must be 'ExtenderConfiguration', got 'ConfigMap'"
    )


def test_error_two_extender_configuration_documents() -> None:
    message = parse_error("", EXTENDER_HEADER + EXTENDER_HEADER)
    assert message.startswith(f"{SOURCE}: document 3:")


def test_plugin_spec_weights_only_on_score() -> None:
    profile = profile_with("multiPoint:\n  enabled: [{name: NodeNumber, weight: 6}]\n")
    assert profile.plugins["permit"] == [PluginSpec("NodeNumber", 0)]
    assert PluginSpec("NodeNumber", 6) in profile.plugins["score"]


def test_pod_budget_defaults_to_10s_on_every_profile_and_0s_turns_it_off() -> None:
    assert [p.pod_budget for p in parse("").profiles] == [10.0]
    config = parse("", EXTENDER_HEADER + "podBudget: 2500ms\n")
    assert [p.pod_budget for p in config.profiles] == [2.5]
    assert [p.pod_budget for p in parse("", EXTENDER_HEADER + "podBudget: 0s\n").profiles] == [None]
