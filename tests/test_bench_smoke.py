"""The benchmark harness at smoke scale: every benchmark runs end to end and reports."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS = {"B1", "B2", "B3", "B4", "B5", "B6", "B6b", "B6c", "B6d", "B6e", "B7", "B8", "B9",
              "B10", "B11"}
PROFILED = {"B1", "B2", "B5", "B7"}


@pytest.mark.slow
def test_smoke_run_reports_a_row_for_every_benchmark(tmp_path):
    out = tmp_path / "out"
    real_docs = ROOT / "docs" / "benchmarks.md"
    docs_before = real_docs.stat().st_mtime_ns if real_docs.exists() else None
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'unused.sqlite3'}"}

    done = subprocess.run(
        [sys.executable, "-m", "bench", "--scale", "0.01", "--out", str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False,
    )

    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    results = json.loads((out / "results.json").read_text())
    assert results["scale"] == 0.01
    rows = results["rows"]
    assert {row["id"] for row in rows} == BENCHMARKS
    assert {row["backend"] for row in rows} == {"sqlite"}
    assert "commit" in results and "dirty" in results
    if results["commit"] is not None:
        assert len(results["commit"]) == 40 and isinstance(results["dirty"], bool)
    assert isinstance(results["load_warning"]["over"], bool)
    assert not [row for row in rows if row["status"] == "error"]
    for row in rows:
        assert row["status"] in {"met", "missed", "not available yet"}, row
        if row["status"] != "not available yet":
            assert row["ratio"] is not None and row["ratio"] > 0, row
        profile = row["figures"].get("profile")
        assert not profile or row["id"] in PROFILED, row["what"]
        if profile:  # small: the top entries only
            assert profile["total_s"] > 0 and profile["by_cumulative"], row["what"]
            assert 0 < len(profile["by_own"]) <= 12, row["what"]
    assert {row["id"] for row in rows if row["figures"].get("profile")} == PROFILED
    markdown = (out / "benchmarks.md").read_text()
    assert all(f"| {bench_id} |" in markdown for bench_id in BENCHMARKS)
    assert f"at commit `{(results['commit'] or '')[:12]}`" in markdown or not results["commit"]
    assert "## Where the time goes" in markdown
    profiles = markdown.split("## Where the time goes")[1].split("## Machine")[0]
    assert all(f"### {bench_id}" in profiles for bench_id in PROFILED)
    assert profiles.count("What separates it from its goal") == len(PROFILED)
    table = done.stdout
    assert "result" in table and all(bench_id in table for bench_id in BENCHMARKS)
    after = real_docs.stat().st_mtime_ns if real_docs.exists() else None
    assert after == docs_before, "the smoke run must not overwrite docs/benchmarks.md"


def test_a_full_run_without_wrk_does_not_report_b2(monkeypatch, tmp_path, db):
    """Python threads saturate before the board does: a full run without wrk says why it
    reports no B2 figure instead of printing the threads' ratio (a smoke run still loads
    with them)."""
    from bench import b2_ledger, server
    from bench.measure import NOT_REPORTED

    monkeypatch.setattr(server.shutil, "which", lambda name: None)
    rows = b2_ledger.run(1, "sqlite", tmp_path)
    assert [row.status for row in rows] == [NOT_REPORTED, NOT_REPORTED]
    assert all("wrk is not installed (apt-get install -y wrk" in row.detail for row in rows)
    assert all(row.ratio is None for row in rows)
