"""extender/replay/report.py without a browser: the files written, the terminal table, bad
input named. (tests/e2e/test_replay_report.py opens the page in Chromium.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from extender.replay.metrics import compute
from extender.replay.report import ReportError, terminal_summary, write

from .test_metrics import _two_nodes


def _results() -> list[dict]:
    first = compute(_two_nodes(), points=11)
    second_log = _two_nodes()
    second_log["policy"] = "packed"
    second_log["events"] = [e for e in second_log["events"] if e[1] != "abandon"]
    return [first, compute(second_log, points=11)]


def test_write_makes_json_and_a_self_contained_page(tmp_path: Path) -> None:
    results = _results()
    text = write(results, tmp_path / "out")
    saved = json.loads((tmp_path / "out" / "report.json").read_text())
    assert saved["version"] == 1
    assert [p["policy"] for p in saved["policies"]] == ["hand", "packed"]
    page = (tmp_path / "out" / "report.html").read_text()
    assert "https://" not in page.split("<script>")[0]  # no stylesheet or script fetched
    assert page.count('class="plot"') == 10  # 7 over time, queueing, 2 heat maps
    assert text == terminal_summary(results)


def test_the_terminal_summary_is_a_side_by_side_table() -> None:
    lines = terminal_summary(_results()).splitlines()
    assert lines[0].split() == ["hand", "packed"]
    rows = {line[:24].strip(): line[24:].split() for line in lines[2:]}
    assert rows["pods scheduled"] == ["3", "3"]
    # Without its abandon event p3 is still pending at the end in the second run.
    assert rows["never scheduled"] == ["1", "1"]
    assert rows["abandoned"] == ["1", "0"]
    assert rows["pending at end"] == ["0", "1"]
    assert rows["queueing p90 (s)"] == ["14", "14"]
    assert rows["mean GPU frag (GPUs)"] == ["0.925", "0.925"]
    assert rows["max spread skew"] == ["2", "2"]
    # Every column is as wide as its widest cell: numbers right-aligned under the names.
    assert len({len(line) for line in lines[:2]}) == 1


def test_repeated_policy_names_are_told_apart_by_seed() -> None:
    results = _results()
    results[1]["policy"] = "hand"
    results[1]["seed"] = 7
    header = terminal_summary(results).splitlines()[0]
    assert "hand (seed None)" in header and "hand (seed 7)" in header


@pytest.mark.parametrize(
    ("results", "message"),
    [
        ([], "results: must be a non-empty list"),
        ([{"pods": {}}], "results[0].queueing: missing"),
        (["x"], "results[0]: must be an object"),
    ],
)
def test_bad_results_are_refused_naming_the_field(results, message: str, tmp_path: Path) -> None:
    with pytest.raises(ReportError) as error:
        write(results, tmp_path)
    assert message in str(error.value)
