"""`flakeboard_ci.py pin`: one manifest digest over the fixture tree, the same for the same
tree in any checkout, and the client's copy of the arbiter, held equal to the rules."""

from __future__ import annotations

import hashlib
import itertools
import os
import subprocess
import sys

import pytest

from flakeboard import rules
from tests.ci_client_view import CLIENT, load_client

client = load_client()
TREE = {"b.json": b'{"rate": 0.02}\n', "a/z.txt": b"zeta\n", "a/\u00e9t\u00e9.txt": b"summer\n",
        "a/deep/x.bin": bytes(range(256))}


def make_tree(root, files, order=None):
    for name in order or files:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(files[name])
    return root


def digest_of(folder, start):
    return client.fixture_manifest([str(folder)], start=str(start)).digest


def pin(cwd, *args):
    return subprocess.run([sys.executable, "-I", "-S", str(CLIENT), "pin", *args], cwd=cwd,
                          env={"PATH": "/usr/bin:/bin"}, capture_output=True, text=True,
                          timeout=60)


def test_the_digest_is_the_sha256_of_the_sorted_lines(tmp_path):
    make_tree(tmp_path / "fixtures", TREE)
    lines = sorted((f"{hashlib.sha256(data).hexdigest()}  fixtures/{name}\n"
                    for name, data in TREE.items()),
                   key=lambda line: line.split("  ", 1)[1].encode())
    expected = hashlib.sha256("".join(lines).encode()).hexdigest()
    assert digest_of(tmp_path / "fixtures", tmp_path) == f"sha256:{expected}"


def test_the_same_tree_gives_the_same_digest_whatever_its_mtimes_and_creation_order(tmp_path):
    first = make_tree(tmp_path / "one" / "fixtures", TREE)
    second = make_tree(tmp_path / "two" / "fixtures", TREE, order=sorted(TREE, reverse=True))
    for index, path in enumerate(sorted(second.rglob("*"))):
        os.utime(path, (1_000_000 + index, 2_000_000 - index))
    assert digest_of(first, tmp_path / "one") == digest_of(second, tmp_path / "two")


def test_one_byte_or_a_rename_changes_the_digest(tmp_path):
    fixtures = make_tree(tmp_path / "fixtures", TREE)
    before = digest_of(fixtures, tmp_path)
    (fixtures / "b.json").write_bytes(b'{"rate": 0.03}\n')
    edited = digest_of(fixtures, tmp_path)
    (fixtures / "b.json").rename(fixtures / "c.json")
    renamed = digest_of(fixtures, tmp_path)
    assert len({before, edited, renamed}) == 3


def test_paths_are_relative_to_the_git_checkout_top(tmp_path):
    fixtures = make_tree(tmp_path / "repo" / "tests" / "fixtures", TREE)
    (tmp_path / "repo" / ".git").mkdir()
    from_top = digest_of(fixtures, tmp_path / "repo")
    from_inside = digest_of(fixtures, tmp_path / "repo" / "tests")
    assert from_top == from_inside
    assert client.repository_root(str(tmp_path / "repo" / "tests")) == \
        (str(tmp_path / "repo"), True)


@pytest.mark.slow
def test_pin_prints_the_digest_and_the_seed(tmp_path):
    make_tree(tmp_path / "fixtures", TREE)
    done = pin(tmp_path, "--fixtures", "fixtures", "--seed", "9137")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"fixture_manifest: {digest_of(tmp_path / 'fixtures', tmp_path)}"
    assert lines[1] == "seed: 9137"
    assert "4 files, paths relative to the current folder (no git checkout)" in lines[2]
    assert done.stderr == ""


@pytest.mark.slow
def test_pin_refuses_a_symlink(tmp_path):
    fixtures = make_tree(tmp_path / "fixtures", TREE)
    (fixtures / "link.json").symlink_to(fixtures / "b.json")
    done = pin(tmp_path, "--fixtures", "fixtures", "--seed", "1")
    assert done.returncode == 64
    assert "link.json is a symbolic link: the fixture manifest refuses links" in done.stderr
    assert done.stdout == ""


@pytest.mark.slow
def test_pin_warns_of_crlf_line_ends(tmp_path):
    make_tree(tmp_path / "fixtures", {"dos.txt": b"a\r\nb\r\n", "unix.txt": b"a\nb\n"})
    done = pin(tmp_path, "--fixtures", "fixtures", "--seed", "1")
    assert done.returncode == 0
    assert done.stderr.count("warning") == 1
    assert "fixtures/dos.txt holds CRLF line ends" in done.stderr


@pytest.mark.slow
@pytest.mark.parametrize("args", [("--fixtures", "absent", "--seed", "1"),
                                  ("--fixtures", "fixtures"), ("--seed", "1")])
def test_pin_needs_an_existing_folder_and_a_seed(tmp_path, args):
    make_tree(tmp_path / "fixtures", TREE)
    done = pin(tmp_path, *args)
    assert done.returncode == 64
    assert "absent does not exist" in done.stderr or "required" in done.stderr


# --- the arbiter's copy ----------------------------------------------------------------


def test_the_clients_precedence_table_is_the_rules():
    for check, lock, status in itertools.product(
            rules.PropertyCheck, rules.FixtureLock, rules.FlakeStatus):
        verdict, reason = rules.arbitrate(check, lock, status)
        assert client.arbitrate(check.value, lock.value, status.value) == \
            (verdict.value, reason.value)


def test_the_clients_aggregate_is_the_rules():
    outcomes = [(verdict, reason) for verdict in rules.Verdict
                for reason in rules.ARBITER_REASONS[:3]]
    for size in range(4):
        for batch in itertools.product(outcomes, repeat=size):
            ours = [rules.ArbiterOutcome(rules.Verdict(v), rules.Reason(r),
                                         rules.FixtureLock.MATCH, rules.FlakeStatus.STABLE)
                    for v, r in batch]
            verdict, reason = rules.aggregate_reason(ours)
            assert client.aggregate([(v.value, r.value) for v, r in batch]) == \
                (verdict.value, reason.value)


# Digests in every spelling, and values that are none (a pin or record stored before the
# board took digests in one form matches itself only).
SPELLINGS = ["sha256:9f2c", "9f2c", "9F2C", "SHA256:9F2C", "sha256:9f2d", "sha256:", "",
             "md5:9f2c", " 9f2c", "9f2c\n", "9f2g", "\u017fha256:9f2c", "\uff19", "m1", "M1"]


def test_the_clients_digest_is_the_rules():
    for value in SPELLINGS:
        assert client.canonical_digest(value) == rules.canonical_digest(value), value
    for one, other in itertools.product(SPELLINGS, repeat=2):
        assert client.same_digest(one, other) is rules.same_digest(one, other), (one, other)
    assert client.DIGEST_PREFIX == rules.DIGEST_PREFIX


def test_the_clients_fixture_lock_is_the_rules():
    pins = [None, rules.FixturePin("sha256:pin", None), rules.FixturePin("sha256:pin", 7),
            rules.FixturePin("9F2C", 7), rules.FixturePin("sha256:9f2c", None)]
    manifests = [None, "", "sha256:pin", "sha256:old", "sha256:9f2c", "9f2c", "sha256:9f2d"]
    for claimed, manifest, seed, pin_ in itertools.product(
            rules.FixtureLock, manifests, [None, 7, 8], pins):
        served = None if pin_ is None else {"manifest": pin_.manifest, "seed": pin_.seed}
        assert client.effective_fixture_lock(claimed.value, manifest, seed, served) == \
            rules.effective_fixture_lock(claimed, manifest, seed, pin_).value


def test_the_client_matches_a_bare_hex_pin_to_the_digest_it_computes(tmp_path):
    """Issue 29's scenario on the client: a pin written as the bare hex, in capitals."""
    digest = digest_of(make_tree(tmp_path / "fixtures", TREE), tmp_path)
    bare = digest.removeprefix("sha256:").upper()
    assert client.effective_fixture_lock("match", digest, 7, {"manifest": bare, "seed": 7}) \
        == "match"
    assert client.effective_fixture_lock("match", digest, 8, {"manifest": bare, "seed": 7}) \
        == "drifted"


DRIFTS = [  # (manifest, seed) against the pin sha256:9f2c with seed 7: what the line names
    ("9F2C", 7, ""),
    ("sha256:9f2c", 8, "PATCH_SEED=8 is not the pin's seed 7"),
    ("sha256:0bad", 7, "the manifest sha256:0bad is not the pin's sha256:9f2c"),
    ("sha256:0bad", 8, "the manifest sha256:0bad is not the pin's sha256:9f2c and "
                       "PATCH_SEED=8 is not the pin's seed 7"),
]


@pytest.mark.parametrize(("manifest", "seed", "said"), DRIFTS)
def test_a_drift_names_only_what_differs_from_the_pin(manifest, seed, said):
    assert client.drift(manifest, seed, {"manifest": "sha256:9f2c", "seed": 7}) == said
