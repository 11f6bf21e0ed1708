"""Scenarios declare the feature gates they need (``FEATURE_GATES``): a bad declaration is one
clear line before anything runs, and a cluster that does not serve what the gates need is
refused with the flags that would."""

from __future__ import annotations

from pathlib import Path

import pytest

from extender.cli.scenario import check_cluster_serves, feature_gates, load_scenario
from extender.scenario.kube import ScenarioError

REPO = Path(__file__).resolve().parents[2]


def scenario_file(tmp_path: Path, gates: str) -> str:
    path = tmp_path / "gated.py"
    path.write_text(
        f'"""A gated scenario."""\n\nFEATURE_GATES = {gates}\n\n\ndef scenario(kube):\n    pass\n'
    )
    return str(path)


def test_the_gang_scenario_declares_the_gang_gates() -> None:
    module = load_scenario(str(REPO / "scenarios" / "gang.py"))
    assert feature_gates(module) == {"GenericWorkload": True, "GangScheduling": True}


def test_a_scenario_without_gates_needs_none() -> None:
    assert feature_gates(load_scenario(str(REPO / "scenarios" / "seed.py"))) == {}


@pytest.mark.parametrize(
    ("gates", "said"),
    [
        ('{"GangScheduling": True}', "depends on GenericWorkload"),
        ('{"NoSuchGate": True}', "unrecognized feature gate: NoSuchGate"),
        ('{"GenericWorkload": "yes"}', "a dict of gate names to True or False"),
        ('["GenericWorkload"]', "a dict of gate names to True or False"),
    ],
)
def test_a_bad_declaration_is_refused_when_loaded(tmp_path: Path, gates: str, said: str) -> None:
    path = scenario_file(tmp_path, gates)
    with pytest.raises(SystemExit) as raised:
        load_scenario(path)
    message = str(raised.value)
    assert message.startswith(f"kube-extender scenario: {path}: FEATURE_GATES: "), message
    assert said in message, message


class Served:
    """What ``check_cluster_serves`` asks of a Kube: which API group versions exist."""

    def __init__(self, *apis: str) -> None:
        self.apis = set(apis)

    def serves(self, api: str) -> bool:
        return api in self.apis


def test_a_cluster_without_the_api_is_refused_with_the_flags() -> None:
    gates = {"GenericWorkload": True, "GangScheduling": True}
    with pytest.raises(ScenarioError) as raised:
        check_cluster_serves(Served(), gates)  # type: ignore[arg-type]
    message = str(raised.value)
    assert "does not serve scheduling.k8s.io/v1alpha2" in message, message
    assert "--runtime-config=scheduling.k8s.io/v1alpha2=true" in message, message
    assert "cluster up --feature-gates" in message, message
    check_cluster_serves(Served("/apis/scheduling.k8s.io/v1alpha2"), gates)  # type: ignore[arg-type]
    check_cluster_serves(Served(), {})  # type: ignore[arg-type]
