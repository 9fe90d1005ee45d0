"""measure's workers load the client compiled: once per version of the client and of Python,
kept in the user's cache (XDG_CACHE_HOME/flakeboard), so that a run does not compile it
again; where the cache cannot be read or written, it is compiled into the run's folder."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
from pathlib import Path

import pytest

from tests.ci_client_view import load_client


@pytest.fixture
def client(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return load_client()


def compiles(client, monkeypatch):
    """Count the client's compilations from here on."""
    made = []
    compile_ = client.py_compile.compile
    monkeypatch.setattr(client.py_compile, "compile",
                        lambda *args, **kwargs: made.append(kwargs) or compile_(*args, **kwargs))
    return made


def test_the_second_run_loads_the_plugin_the_first_compiled(client, tmp_path, monkeypatch):
    made = compiles(client, monkeypatch)
    first = client.compiled_plugin(str(tmp_path / "run1"))
    second = client.compiled_plugin(str(tmp_path / "run2"))
    cache = tmp_path / "cache" / "flakeboard"
    assert len(made) == 1
    assert os.path.dirname(first) == str(tmp_path / "run1")
    assert os.path.dirname(second) == str(cache)
    assert os.path.basename(second) == os.path.basename(first)
    assert Path(second).read_bytes() == Path(first).read_bytes()
    assert [p.name for p in cache.iterdir()] == [os.path.basename(second)]  # nothing partial
    # What the workers load: the module, by the file's name (-p NAME, the folder on the path).
    name = os.path.splitext(os.path.basename(second))[0]
    loader = importlib.machinery.SourcelessFileLoader(name, second)
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(name, loader))
    loader.exec_module(module)
    assert module.MeasureWorker.__name__ == "MeasureWorker"


def test_another_client_or_python_is_compiled_under_another_name(client, tmp_path,
                                                                 monkeypatch):
    first = os.path.basename(client.compiled_plugin(str(tmp_path / "run1")))
    monkeypatch.setattr(client.importlib.util, "MAGIC_NUMBER", b"\x00\x01\r\n")
    other = os.path.basename(client.compiled_plugin(str(tmp_path / "run2")))
    assert other != first and other.startswith("flakeboard_ci_worker_")


def test_a_damaged_cached_plugin_is_compiled_again(client, tmp_path, monkeypatch):
    cached = client.compiled_plugin(str(tmp_path / "run1"))
    cached = os.path.join(str(tmp_path / "cache" / "flakeboard"), os.path.basename(cached))
    Path(cached).write_bytes(b"half")
    made = compiles(client, monkeypatch)
    path = client.compiled_plugin(str(tmp_path / "run2"))
    assert len(made) == 1 and os.path.dirname(path) == str(tmp_path / "run2")
    assert Path(cached).read_bytes()[:4] == importlib.util.MAGIC_NUMBER  # and kept whole again


@pytest.mark.parametrize("where", ["a file", "relative"])
def test_without_a_usable_cache_each_run_compiles_into_its_folder(where, tmp_path,
                                                                  monkeypatch):
    blocked = tmp_path / "cache"
    blocked.write_text("not a folder")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked) if where == "a file" else "cache")
    client = load_client()
    made = compiles(client, monkeypatch)
    paths = [client.compiled_plugin(str(tmp_path / f"run{i}")) for i in (1, 2)]
    assert len(made) == 2
    assert [os.path.dirname(path) for path in paths] == [str(tmp_path / "run1"),
                                                         str(tmp_path / "run2")]
    assert blocked.read_text() == "not a folder"


def test_the_cache_keeps_the_newest_compiled_versions(client, tmp_path):
    cache = tmp_path / "cache" / "flakeboard"
    cache.mkdir(parents=True)
    for index in range(12):
        old = cache / f"flakeboard_ci_worker_{index:016x}.pyc"
        old.write_bytes(b"old")
        os.utime(old, (1_000_000 + index, 1_000_000 + index))
    (cache / "notes.txt").write_text("not ours")
    newest = os.path.basename(client.compiled_plugin(str(tmp_path / "run")))
    kept = sorted(p.name for p in cache.iterdir())
    assert len(kept) == client.PLUGIN_CACHE_KEEPS + 1
    assert newest in kept and "notes.txt" in kept
    assert f"flakeboard_ci_worker_{11:016x}.pyc" in kept
    assert f"flakeboard_ci_worker_{0:016x}.pyc" not in kept
