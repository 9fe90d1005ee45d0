"""`flakeboard_ci.py measure`'s diagnosis experiments (SPEC 2.4d, docs/diagnosis.md): each run
seeds `random` from its PATCH_SEED; a flaky target's failing seeds are replayed in fresh
processes beside passing ones (seeded), and one that is not seeded runs a block under CPU
load (timing); `replay` runs a test again as measure ran it."""

from __future__ import annotations

import itertools
import math
import pathlib
import re
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.ci_client_view import load_client
from tests.measure_projects import CLIENT, clean_env, make_project, measure

client = load_client()

COIN = """
import random


def test_coin():
    assert random.random() > 0.25


def test_steady():
    assert random.random() < 2
"""
# Whether a busy process of measure's load runs beside this test: a child of one of its
# ancestors (the measure process), found in /proc, so that the test does not depend on how
# loaded the machine is, nor on another measure running beside it.
BUSY_ANCESTOR = """
import pathlib


def parent(pid):
    stat = pathlib.Path(f"/proc/{pid}/stat").read_text()
    return int(stat.rsplit(")", 1)[1].split()[1])


def loaded():
    mine, pid = set(), os.getpid()
    while pid > 1:
        mine.add(pid)
        pid = parent(pid)
    for entry in pathlib.Path("/proc").glob("[0-9]*"):
        try:
            if b"while True: pass" in (entry / "cmdline").read_bytes():
                if parent(entry.name) in mine:
                    return True
        except (OSError, ValueError, IndexError):
            pass
    return False
"""
# Fails under measure's CPU load, and, whatever the load, at one microsecond in eight of
# the clock (not of its seed).
DEADLINE = BUSY_ANCESTOR + """

def test_deadline():
    assert not loaded(), "too slow under load"
    assert __import__("time").perf_counter_ns() // 1000 % 8, "an unlucky microsecond"
"""
DIAGNOSIS = re.compile(r"^DIAGNOSIS (?P<node>\S+): (?P<verdict>[^:]+)(?:: (?P<rest>.*))?$", re.M)


def diagnoses(done):
    return {m["node"]: (m["verdict"], m["rest"] or "") for m in DIAGNOSIS.finditer(done.stderr)}


def replay(project, *args):
    return subprocess.run([sys.executable, "-I", "-S", str(CLIENT), "replay", *args],
                          cwd=project, env=clean_env(), capture_output=True, text=True,
                          timeout=120)


def failing_seeds(rest):
    return [int(seed) for seed in re.search(r"failing seeds ([\d, ]+) failed", rest)[1]
            .split(", ")]


@pytest.mark.slow
def test_a_coin_on_random_is_seeded_and_its_replay_fails_every_time(tmp_path):
    project = make_project(tmp_path / "p", {"tests/test_coin.py": COIN},
                           ["tests/test_coin.py::test_coin", "tests/test_coin.py::test_steady"])
    done = measure(project, "--runs", "40", "--exact", "--workers", "2", "--order", "module",
                   diagnose=True)
    assert done.returncode == 1, done.stderr
    found = diagnoses(done)
    # The steady test is not flaky: no experiments for it.
    assert list(found) == ["tests/test_coin.py::test_coin"], done.stderr
    verdict, rest = found["tests/test_coin.py::test_coin"]
    assert verdict.startswith("seeded"), done.stderr
    seeds = failing_seeds(rest)
    # Every failing seed failed both its replays, and the controls passed both theirs.
    assert f"failed {2 * len(seeds)}/{2 * len(seeds)} replays" in rest
    assert f"passing seeds {2 * len(seeds)}/{2 * len(seeds)} passed" in rest
    command = re.search(r"reproduce: (.*)$", rest)[1]
    assert command == (f"python3 {CLIENT} replay tests/test_coin.py::test_coin "
                       f"--seed {seeds[0]}")
    # The command fails five times out of five; a control seed passes five of five.
    control = next(seed for seed in itertools.count(9137)
                   if client.random.Random(seed).random() > 0.25)
    for _ in range(5):
        failed = replay(project, "tests/test_coin.py::test_coin", "--seed", str(seeds[0]))
        assert failed.returncode == 1, failed.stdout + failed.stderr
        assert "assert" in failed.stdout and "1 failed" in failed.stdout
        passed = replay(project, "tests/test_coin.py::test_coin", "--seed", str(control))
        assert passed.returncode == 0, passed.stdout + passed.stderr


@pytest.mark.slow
def test_a_run_in_a_row_and_its_replay_see_one_random_value(tmp_path):
    """A block's runs (which share pytest's protocol) and a fresh process at each seed see
    the values ``random`` gives at that seed: what the replay reproduces is the run."""
    project = make_project(tmp_path / "p", {"tests/test_coin.py": COIN})
    block = replay(project, "tests/test_coin.py::test_coin", "--seed", "9137", "--runs", "30")
    expected = [seed for seed in range(9137, 9167)
                if not client.random.Random(seed).random() > 0.25]
    assert expected, "the seeds should fail some runs"
    assert block.returncode == 1, block.stderr
    # The seeds that failed, the first ten of them named.
    assert (f"REPLAY tests/test_coin.py::test_coin: {len(expected)}/30 failed "
            f"(PATCH_SEED {', '.join(map(str, expected[:10]))}, ...)") in block.stdout


# A numpy whose global generator says what it was last seeded with (none is installed here):
# the project imports it, as a project that uses numpy does.
FAKE_NUMPY = """
import sys
import types

numpy = types.ModuleType("numpy")
numpy.random = types.SimpleNamespace(seeded=[], seed=lambda seed: numpy.random.seeded.append(seed))
sys.modules["numpy"] = numpy
"""
NUMPY_TEST = """
import sys


def test_numpy_seeded():
    seeded = sys.modules["numpy"].random.seeded
    assert seeded and seeded[-1] == int(os.environ["PATCH_SEED"]) % 2**32, seeded
"""


@pytest.mark.slow
def test_numpy_is_seeded_from_the_run_s_seed_when_imported(tmp_path):
    project = make_project(tmp_path / "p", {"tests/conftest.py": FAKE_NUMPY,
                                            "tests/test_np.py": NUMPY_TEST})
    block = replay(project, "tests/test_np.py::test_numpy_seeded", "--seed", "9137",
                   "--runs", "20")
    assert "REPLAY tests/test_np.py::test_numpy_seeded: 0/20 failed" in block.stdout, (
        block.stdout + block.stderr)
    once = replay(project, "tests/test_np.py::test_numpy_seeded", "--seed", str(2**32 + 5))
    assert once.returncode == 0, once.stdout


@pytest.mark.slow
@pytest.mark.skipif(not pathlib.Path("/proc/self/cmdline").exists(), reason="needs /proc")
def test_a_test_that_fails_under_load_is_timing(tmp_path):
    project = make_project(tmp_path / "p", {"tests/test_deadline.py": DEADLINE},
                           ["tests/test_deadline.py::test_deadline"])
    done = measure(project, "--runs", "60", "--exact", "--workers", "1", "--order", "module",
                   diagnose=True)
    verdict, rest = diagnoses(done)["tests/test_deadline.py::test_deadline"]
    assert verdict.startswith("timing"), done.stderr
    idle, load = re.search(r"(\d+)/60 failed idle, (\d+)/60 under CPU load", rest).groups()
    assert int(idle) < 30 and load == "60", done.stderr
    assert rest.endswith(f"reproduce: python3 {CLIENT} replay "
                         f"tests/test_deadline.py::test_deadline --stress --runs 60 --seed 9137")


@pytest.mark.slow
def test_no_diagnose_and_a_spent_budget_run_no_experiments(tmp_path):
    project = make_project(tmp_path / "p", {"tests/test_coin.py": COIN},
                           ["tests/test_coin.py::test_coin"])
    off = measure(project, "--runs", "20", "--exact", "--order", "module")
    assert "flaky" in off.stderr and "DIAGNOSIS" not in off.stderr, off.stderr
    spent = measure(project, "--runs", "20", "--exact", "--order", "module",
                    "--diagnose-budget", "0", diagnose=True)
    assert diagnoses(spent)["tests/test_coin.py::test_coin"] == (
        "neither seeded nor timing", "the diagnose budget ran out"), spent.stderr
    refused = measure(project, "--diagnose-budget", "-1", diagnose=True)
    assert refused.returncode == 64
    assert "--diagnose-budget must be a number of seconds, 0 or more" in refused.stderr


@pytest.mark.slow
def test_replay_refuses_a_node_with_no_file(tmp_path):
    project = make_project(tmp_path / "p", {"tests/test_coin.py": COIN})
    done = replay(project, "tests/test_gone.py::test_x", "--seed", "1")
    assert done.returncode == 64
    assert "there is no tests/test_gone.py" in done.stderr


def brute_force_greater(fails, n, other_fails, other_n):
    """Fisher's one-sided p by listing every table with the same margins."""
    failures = fails + other_fails
    tables = [k for k in range(0, n + 1) if 0 <= failures - k <= other_n]
    weight = {k: math.comb(n, k) * math.comb(other_n, failures - k) for k in tables}
    return sum(weight[k] for k in tables if k >= fails) / sum(weight.values())


@given(st.integers(1, 14), st.integers(1, 14), st.data())
def test_fisher_is_the_sum_over_the_tables_as_extreme(n, other_n, data):
    fails = data.draw(st.integers(0, n))
    other_fails = data.draw(st.integers(0, other_n))
    p = client.fisher_greater(fails, n, other_fails, other_n)
    assert 0 <= p <= 1
    assert p == pytest.approx(brute_force_greater(fails, n, other_fails, other_n))


@pytest.mark.parametrize(("load", "idle", "p"), [
    ((31, 100), (2, 100), 5.68e-9),  # the example: far apart
    ((5, 100), (5, 100), 0.6262),  # the same rate
    ((0, 10), (0, 10), 1.0),  # no failure at all
    ((2, 100), (31, 100), 1.0),  # fewer under load: never above
])
def test_fisher_table(load, idle, p):
    assert client.fisher_greater(*load, *idle) == pytest.approx(p, rel=0.05)
