"""docs/dra.md shows kubectl readers the objects scenarios/dra.py creates, and its dump command
carries every kind ``simulate`` and ``explain`` read (docs/simulate.md's list).
tests/e2e/test_dra_try.py runs the section's commands."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from extender.cli.scenario import load_scenario

REPO = Path(__file__).resolve().parents[2]
DOC = (REPO / "docs" / "dra.md").read_text(encoding="utf-8")
TRY_IT = DOC.split("## Try it with a sample driver's slices", 1)[1].split("\n## ", 1)[0]
SCENARIO = load_scenario(str(REPO / "scenarios" / "dra.py"))


def doc_objects() -> dict[str, dict]:
    found = re.search(r"```yaml\n(.*?)```", TRY_IT, re.S)
    assert found, "the Try it section lost its YAML"
    return {obj["kind"]: obj for obj in yaml.safe_load_all(found.group(1))}


def test_the_yaml_is_what_the_scenario_creates() -> None:
    objects = doc_objects()
    assert objects["DeviceClass"] == SCENARIO.DEVICE_CLASS
    assert objects["ResourceSlice"] == SCENARIO.gpu_slice("node-1")
    assert objects["Node"]["metadata"]["name"] == "node-1"
    template = objects["ResourceClaimTemplate"]
    assert template["metadata"].pop("namespace") == "default"
    assert template == SCENARIO.CLAIM_TEMPLATE
    pod = objects["Pod"]["spec"]
    assert pod["schedulerName"] == "kube-extender"
    assert pod["resourceClaims"] == SCENARIO.POD_CLAIMS
    assert pod["containers"][0]["resources"]["claims"] == [{"name": "gpu"}]


def dump_kinds(text: str) -> list[str]:
    found = re.search(r"`kubectl get\s+([a-z,]+)\s+-A\s+-o\s+yaml`", text)
    assert found, "no kubectl get ... -A -o yaml dump command"
    return found.group(1).split(",")


def test_the_dump_command_includes_resourceclaimtemplates() -> None:
    simulate = (REPO / "docs" / "simulate.md").read_text(encoding="utf-8")
    kinds = dump_kinds(DOC)
    assert "resourceclaimtemplates" in kinds
    assert kinds == dump_kinds(simulate.split("## DRA", 1)[1])
