"""``kube-extender serve`` refuses a profile with gang scheduling at startup: the extender
protocol has no Permit (where gang members wait for their quorum) and no pod group cycle. One
line, exit 2, before gunicorn starts, pointing to docs/gang.md, which explains the split."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from extender.cli.serve import StartupError, check_startup
from extender.config import loads

ROOT = Path(__file__).resolve().parents[2]

GANG_PROFILE = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: gangs
    plugins:
      multiPoint:
        enabled:
          - name: GangScheduling
"""


def test_check_startup_refuses_gang_scheduling() -> None:
    config = loads(GANG_PROFILE, source="gangs.yaml")
    with pytest.raises(StartupError) as raised:
        check_startup(config, connected=False)
    message = str(raised.value)
    assert message.startswith("gangs.yaml: profile 'gangs' enables GangScheduling"), message
    assert "Permit" in message and "docs/gang.md" in message, message
    assert "kube-extender run --feature-gates GenericWorkload=true,GangScheduling=true" in message


def test_only_the_gang_plugin_makes_the_difference() -> None:
    offline = (ROOT / "examples" / "extender-offline.yaml").read_text()
    check_startup(loads(offline, source="offline.yaml"), connected=False)
    bind = "bind: {enabled: [{name: DefaultBinder}]}"
    permit = "permit: {enabled: [{name: GangScheduling}]}"
    with_gangs = offline.replace(bind, f"{bind}\n      {permit}")
    assert with_gangs != offline
    with pytest.raises(StartupError, match="enables GangScheduling"):
        check_startup(loads(with_gangs, source="offline.yaml"), connected=False)


def test_serve_exits_2_with_one_line(tmp_path: Path) -> None:
    config = tmp_path / "gangs.yaml"
    config.write_text(GANG_PROFILE)
    proc = subprocess.run(
        [sys.executable, "-m", "extender", "serve", "--config", str(config), "--offline"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"kube-extender serve: {config}: profile 'gangs' enables")
    assert "GangScheduling" in lines[0] and "docs/gang.md" in lines[0], lines[0]


def test_the_doc_it_points_to_explains_why() -> None:
    text = (ROOT / "docs" / "gang.md").read_text(encoding="utf-8")
    assert "## With kube-scheduler and an extender" in text
    assert "kube-extender serve" in text and "Permit" in text
