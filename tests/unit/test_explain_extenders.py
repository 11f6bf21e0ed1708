"""explain and simulate with the config's ``extenders:`` and with pods whose schedulerName no
profile has: explain calls the extenders (filter, prioritize: read-only verbs, over real HTTP,
with the standalone scheduler's client) or says it did not; an unknown schedulerName is
refused with the known profiles."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from extender.cli.explain import extenders_of
from extender.config import loads
from extender.explain import render
from extender.explain.cluster import InputError, dry_run_framework, pick_profile, profile_for_pods
from extender.explain.engine import Explainer, disagreement_note
from extender.testing import Cluster, node, pod

ROOT = Path(__file__).resolve().parents[2]


class RejectsB(BaseHTTPRequestHandler):
    """A node-cache-capable extender: filter rejects node ``reject`` (the reason below),
    prioritize gives ``prefer`` 10 and the others 0; any other verb is answered 500 (and
    recorded in ``calls``, which the tests check)."""

    calls: list[str] = []
    reject = "b"
    prefer = "c"

    def do_POST(self) -> None:
        verb = self.path.rstrip("/").rsplit("/", 1)[-1]
        args = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).calls.append(verb)
        names = args.get("NodeNames") or []
        reject, prefer = type(self).reject, type(self).prefer
        if verb == "filter":
            reply: object = {
                "NodeNames": [n for n in names if n != reject],
                "FailedNodes": {reject: "node(s) had no licence"} if reject in names else {},
                "FailedAndUnresolvableNodes": {},
                "Error": "",
            }
        elif verb == "prioritize":
            reply = [{"Host": n, "Score": 10 if n == prefer else 0} for n in names]
        else:
            self.send_response(500)
            self.end_headers()
            return
        body = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def serving(handler: type[RejectsB], *, reject: str = "b", prefer: str = "c") -> Iterator[str]:
    """The extender on a free local port; yields its URL."""
    handler.calls, handler.reject, handler.prefer = [], reject, prefer
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def extender_url() -> Iterator[str]:
    with serving(RejectsB) as url:
        yield url


def _config(
    url: str,
    *,
    ignorable: bool = False,
    preempt: bool = False,
    filter: str = "filter",
    prioritize: str = "prioritize",
):
    extra = "    ignorable: true\n" if ignorable else ""
    extra += "    preemptVerb: preempt\n" if preempt else ""
    return loads(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles:\n- schedulerName: default-scheduler\n"
        f"extenders:\n- urlPrefix: {url}\n  filterVerb: {filter}\n  prioritizeVerb: {prioritize}\n"
        f"  weight: 5\n  nodeCacheCapable: true\n{extra.replace('    ', '  ')}"
    )


CLUSTER = Cluster(nodes=[node("a", cpu="8"), node("b", cpu="16"), node("c", cpu="4")])


def _explain(config, p: dict, cluster: Cluster = CLUSTER):
    config, profile, notes = profile_for_pods(config, [p], None)
    fwk = dry_run_framework(config, profile, cluster)
    ex = Explainer(fwk, extenders=extenders_of(config)).explain(p, cluster.snapshot())
    ex.notes[:0] = notes
    return ex


def test_explain_calls_the_extender_and_shows_its_verdicts_and_scores(extender_url: str) -> None:
    ex = _explain(_config(extender_url), pod("p", cpu="1"))
    # Without the extender the plugins alone would choose b (the most free CPU).
    rejected = ex.node("b").status
    assert rejected is not None and rejected.plugin == "Extender"
    assert rejected.reasons == ("node(s) had no licence",)
    assert sorted(ex.feasible) == ["a", "c"]
    assert ex.chosen == ["c"]  # 10 x weight 5 x 10 = 500 outweighs a's free CPU
    score = ex.node("c").scores[extender_url]
    assert (score.raw, score.normalized, score.weighted) == (10, 100, 500)
    assert ex.score_weights[extender_url] == 5
    assert RejectsB.calls == ["filter", "prioritize"]  # read-only verbs only
    data = render.to_dict(ex)
    assert data["extenders"] == [
        {"name": extender_url, "called": ["filter", "prioritize"],
         "answered": ["filter", "prioritize"], "failed": {}, "error": None, "ignorable": False}
    ]  # fmt: skip
    assert data["notes"] == []
    table = render.table(ex)
    assert f"Extenders called: {extender_url} (answered: filter, prioritize)" in table
    assert "Extender: node(s) had no licence" in table


def test_an_unreachable_extender_is_the_error_kube_scheduler_would_report() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}"  # closed once the block ends
    ex = _explain(_config(url), pod("p"))
    assert ex.verdict == "Error"
    assert ex.error is not None and f"failed filter with extender at URL {url}/filter" in ex.error
    ignorable = _explain(_config(url, ignorable=True), pod("p"))
    assert ignorable.verdict == "Schedulable"
    assert any("(ignorable) failed" in note for note in ignorable.notes)


def test_a_down_ignorable_extender_keeps_both_failures_and_says_its_filter_was_skipped() -> None:
    """A free port nobody listens on: filter fails (skipped, as kube-scheduler skips an
    ignorable extender), so b, which the extender denies, stays feasible; prioritize then
    fails too. Both failures are kept, and the table says neither verb answered."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}"  # closed once the block ends
    ex = _explain(_config(url, ignorable=True), pod("p", cpu="1"))
    assert ex.verdict == "Schedulable" and ex.chosen == ["b"]  # what the extender denies
    (report,) = ex.extenders
    assert report.called == ["filter", "prioritize"] and report.answered == []
    assert sorted(report.failed) == ["filter", "prioritize"]
    assert f"failed filter with extender at URL {url}/filter" in report.failed["filter"]
    assert f"failed prioritize with extender at URL {url}/prioritize" in report.failed["prioritize"]
    assert report.error is not None and report.error.startswith("filter: ")
    filter_note, prioritize_note = ex.notes
    assert filter_note.startswith(f"extender {url} (ignorable) failed filter (")
    assert "its filter was skipped, so the nodes it would reject were not rejected" in filter_note
    assert prioritize_note.startswith(f"extender {url} failed prioritize (")
    assert url not in ex.score_weights
    data = render.to_dict(ex)["extenders"][0]
    assert (data["called"], data["answered"]) == (["filter", "prioritize"], [])
    assert sorted(data["failed"]) == ["filter", "prioritize"]
    assert data["error"].startswith("filter: failed filter")
    table = render.table(ex)
    assert f"Extenders called: {url} (failed: filter, prioritize)" in table
    assert "Note: extender" in table and "its filter was skipped" in " ".join(table.split())


def test_a_prioritize_failure_after_a_filter_that_answered_is_said(extender_url: str) -> None:
    """prioritizeVerb answers 500: kube-scheduler ignores it (ignorable or not); filter's
    verdict stands and the table says which verb answered and which failed."""
    ex = _explain(_config(extender_url, prioritize="broken"), pod("p", cpu="1"))
    assert ex.verdict == "Schedulable" and ex.node("b").status is not None
    (report,) = ex.extenders
    assert report.answered == ["filter"] and list(report.failed) == ["prioritize"]
    assert "code 500" in report.failed["prioritize"]
    assert extender_url not in ex.score_weights
    assert len(ex.notes) == 1 and "kube-scheduler ignores prioritize failures" in ex.notes[0]
    assert f"{extender_url} (answered: filter; failed: prioritize)" in render.table(ex)


def test_an_ignorable_extender_whose_filter_failed_still_scores_with_its_weight(
    extender_url: str,
) -> None:
    ex = _explain(_config(extender_url, ignorable=True, filter="broken"), pod("p", cpu="1"))
    (report,) = ex.extenders
    assert report.answered == ["prioritize"] and list(report.failed) == ["filter"]
    assert ex.feasible == ["a", "b", "c"]  # its filter was skipped
    assert ex.score_weights[extender_url] == 5
    score = ex.node("c").scores[extender_url]
    assert (score.raw, score.normalized, score.weighted) == (10, 100, 500)
    assert f"{extender_url} (answered: prioritize; failed: filter)" in render.table(ex)


def test_preemption_notes_that_the_preempt_verb_was_not_asked(extender_url: str) -> None:
    ex = _explain(_config(extender_url, preempt=True), pod("p", cpu="64"))
    assert ex.verdict == "Unschedulable" and ex.preemption is not None
    assert any("preemptVerb" in note for note in ex.notes)
    assert "preempt" not in RejectsB.calls


def test_a_misspelled_scheduler_name_is_refused_with_the_known_profiles() -> None:
    stuck = pod("p", scheduler_name="defualt-scheduler")
    with pytest.raises(InputError) as caught:
        profile_for_pods(None, [stuck], None)
    text = str(caught.value)
    assert "unknown profile 'defualt-scheduler'" in text
    assert "pod default/p's spec.schedulerName names no profile" in text
    assert "the only profile is 'default-scheduler'" in text
    config = loads(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles:\n- schedulerName: one\n- schedulerName: two\n"
    )
    with pytest.raises(InputError, match="the config's profiles: one, two"):
        profile_for_pods(config, [stuck], None)
    with pytest.raises(InputError, match="unknown profile 'x'"):
        pick_profile(None, "x")
    # --profile explains it anyway, and says the pod will not be scheduled as it is.
    _, profile, notes = profile_for_pods(None, [stuck], "default-scheduler")
    assert profile.scheduler_name == "default-scheduler"
    assert len(notes) == 1 and "no scheduler with this configuration schedules it" in notes[0]


def test_simulate_says_it_did_not_call_the_extenders(tmp_path: Path, extender_url: str) -> None:
    (tmp_path / "config.yaml").write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        f"extenders:\n- urlPrefix: {extender_url}\n  filterVerb: filter\n"
    )
    (tmp_path / "dump.yaml").write_text(
        "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n"
        "status: {allocatable: {cpu: '4', memory: 8Gi, pods: '110'}}\n"
    )
    (tmp_path / "pods.yaml").write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c}]}\n"
    )
    argv = ["--cluster", "dump.yaml", "--pods", "pods.yaml", "--config", "config.yaml"]

    def simulate(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "extender", "simulate", *argv, *extra],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
        )

    report = json.loads(simulate("-o", "json").stdout)
    assert report["extenders"] == [{"urlPrefix": extender_url, "called": False}]
    assert any("were not called: simulate is offline" in n for n in report["notes"])
    assert simulate().stdout.startswith(f"Note: the config's extenders ({extender_url})")
    assert RejectsB.calls == []


def test_simulate_refuses_pods_of_an_unknown_profile(tmp_path: Path) -> None:
    (tmp_path / "dump.yaml").write_text(
        "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n"
        "status: {allocatable: {cpu: '4', memory: 8Gi, pods: '110'}}\n"
    )
    (tmp_path / "pods.yaml").write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n"
        "spec: {schedulerName: defualt-scheduler, containers: [{name: c}]}\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "extender", "simulate", "--cluster", "dump.yaml", "--pods",
         "pods.yaml"],
        cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "unknown profile 'defualt-scheduler'" in done.stderr


GPU = Cluster(nodes=[node("gpu-1", cpu="8")])
REJECTED = "0/1 nodes are available: 1 node(s) had no licence."


def _pending(reason: str = "Unschedulable", message: str = REJECTED) -> dict:
    """A pod its scheduler found no node for, with the condition kube-scheduler writes."""
    p = pod("p", cpu="1")
    p["status"] = {
        "phase": "Pending",
        "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": reason, "message": message}
        ],
    }
    return p


def test_a_verdict_the_pods_condition_contradicts_is_noted_and_points_at_config() -> None:
    """Only the extender rejects gpu-1: without --config explain finds it schedulable while
    the pod's condition says why not; the note quotes it and names --config."""
    ex = _explain(None, _pending(), GPU)
    assert ex.verdict == "Schedulable" and ex.chosen == ["gpu-1"]
    assert ex.contradicts_condition
    note = disagreement_note(ex, None, 0)
    assert note is not None
    assert note.startswith(
        f'the scheduler that handled this pod reported "{REJECTED}" (PodScheduled False, '
        "Unschedulable), but explain finds it schedulable: explain evaluated only profile "
        "default-scheduler's default plugins (no --config), without that scheduler's extenders"
    )
    assert "rerun with --config <that scheduler's KubeSchedulerConfiguration>" in note
    ex.notes.insert(0, note)  # as the CLI does
    data = render.to_dict(ex)
    assert data["notes"][0] == note
    assert data["podScheduled"] == {
        "status": "False", "reason": "Unschedulable", "message": REJECTED
    }  # fmt: skip
    assert data["contradictsPodScheduled"] is True
    table = render.table(ex).splitlines()
    assert table[1].startswith("Note: the scheduler that handled this pod reported")
    # An extender error recorded as SchedulerError contradicts a Schedulable verdict too.
    failed = _explain(None, _pending("SchedulerError", "failed filter with extender"), GPU)
    assert failed.contradicts_condition


def test_with_the_config_the_verdict_agrees_or_the_note_says_what_was_evaluated() -> None:
    with serving(RejectsB, reject="gpu-1") as url:
        agreed = _explain(_config(url), _pending(), GPU)
    assert agreed.verdict == "Unschedulable" and not agreed.contradicts_condition
    assert disagreement_note(agreed, "sched.yaml", 1) is None
    assert render.to_dict(agreed)["contradictsPodScheduled"] is False
    # The config's extender lets gpu-1 through now: the note names what explain ran.
    with serving(RejectsB, reject="b") as url:
        ex = _explain(_config(url), _pending(), GPU)
    note = disagreement_note(ex, "sched.yaml", 1)
    assert note is not None and "with profile default-scheduler of sched.yaml (1 extender)" in note
    assert "--config <" not in note
    # A pod with no condition, or a scheduled one, contradicts nothing.
    assert _explain(None, pod("q"), GPU).condition is None
    assert disagreement_note(_explain(None, pod("q"), GPU), None, 0) is None
