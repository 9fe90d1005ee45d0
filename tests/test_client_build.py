"""client/build.py: the served client is the assembly of client/src/flakeboard_ci, and the
build refuses a module that would break the one file. That the assembled file runs on
Python 3.8 is test_ci_client_formats.py's test_the_client_runs_on_python_3_8."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from email.utils import parsedate_to_datetime
from pathlib import Path

import pytest
from django.conf import settings
from django.utils.http import http_date

CLIENT = settings.BASE_DIR / "client"
PY38 = Path.home() / ".pyenv" / "versions" / "3.8.18" / "bin" / "python3"


def load_build():
    spec = importlib.util.spec_from_file_location("flakeboard_client_build",
                                                  CLIENT / "build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


build = load_build()


@pytest.fixture
def sources(tmp_path):
    """A copy of the client's modules, to add a module to."""
    package = tmp_path / "flakeboard_ci"
    shutil.copytree(build.PACKAGE, package, ignore=shutil.ignore_patterns("__pycache__"))
    return package


def assemble_with(package, source, name="extra", before=None):
    """The assembly of ``package`` with a module ``name`` of ``source`` added, last or just
    before the module ``before``."""
    (package / f"{name}.py").write_text(source, encoding="utf-8")
    modules = list(build.MODULES)
    at = len(modules) if before is None else [m for m, _ in modules].index(before)
    modules.insert(at, (name, "a module the test adds"))
    return build.assemble(package, modules)


def test_the_served_client_is_the_assembly_of_its_modules(client, monkeypatch, tmp_path):
    from runs.api import download

    assembled = build.assemble()
    answer = client.get("/ci/flakeboard_ci.py")
    assert answer.content.decode() == assembled
    assert answer["Content-Disposition"] == 'attachment; filename="flakeboard_ci.py"'
    # A checkout where nothing has built it yet serves the assembly all the same.
    monkeypatch.setattr(download, "CLIENT_PATH", tmp_path / "flakeboard_ci.py")
    assert client.get("/ci/flakeboard_ci.py").content.decode() == assembled
    assert download.stale_file() is None


@pytest.mark.slow
def test_the_served_client_carries_its_build_as_its_etag(client, tmp_path):
    answer = client.get("/ci/flakeboard_ci.py")
    stamp = build.build_of(answer.content.decode())
    assert re.fullmatch(r"[0-9a-f]{16}", stamp)
    assert answer["ETag"] == f'"{stamp}"' and answer["Cache-Control"] == "no-cache"
    again = client.get("/ci/flakeboard_ci.py", headers={"If-None-Match": f'"{stamp}"'})
    assert (again.status_code, again.content) == (304, b"")
    older = client.get("/ci/flakeboard_ci.py", headers={"If-None-Match": '"0123456789abcdef"'})
    assert older.status_code == 200
    script = tmp_path / "flakeboard_ci.py"
    script.write_bytes(answer.content)
    version = subprocess.run([sys.executable, str(script), "--version"], capture_output=True,
                             text=True, check=True)
    assert version.stdout.strip() == f"flakeboard_ci.py 1 (build {stamp})"


def test_the_served_client_is_dated_by_its_newest_source(client):
    """A client copy revalidated by date (``If-Modified-Since``, what ``curl -z`` sends) is
    answered 304 while no source is newer; ``If-None-Match`` decides when both are sent."""
    answer = client.get("/ci/flakeboard_ci.py")
    newest = max(path.stat().st_mtime for path in build.sources())
    assert CLIENT / "build_checks.py" in build.sources()
    assert parsedate_to_datetime(answer["Last-Modified"]).timestamp() == int(newest)
    since = {"If-Modified-Since": answer["Last-Modified"]}
    assert client.get("/ci/flakeboard_ci.py", headers=since).status_code == 304
    earlier = {"If-Modified-Since": http_date(int(newest) - 1)}
    assert client.get("/ci/flakeboard_ci.py", headers=earlier).status_code == 200
    another_build = {**since, "If-None-Match": '"0123456789abcdef"'}
    assert client.get("/ci/flakeboard_ci.py", headers=another_build).status_code == 200


@pytest.mark.slow
def test_curl_z_fetches_the_client_only_when_it_changed(live_board, tmp_path):
    """docs/ci-client.md's revalidation, as written there."""
    command = ["curl", "-fsS", "-R", "-z", "flakeboard_ci.py", "-o", "flakeboard_ci.py",
               "-w", "%{http_code}", f"{live_board.url}/ci/flakeboard_ci.py"]
    first = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, check=True)
    script = tmp_path / "flakeboard_ci.py"
    assert first.stdout == "200" and script.read_text() == build.assemble()
    again = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, check=True)
    assert again.stdout == "304" and script.read_text() == build.assemble()


def test_a_change_under_src_changes_the_build(sources):
    before = build.build_of(build.assemble(sources))
    core = sources / "core.py"
    core.write_text(core.read_text(encoding="utf-8").replace("EXIT_USAGE = 64",
                                                             "EXIT_USAGE = 65"),
                    encoding="utf-8")
    after = build.assemble(sources)
    assert build.build_of(after) != before and "EXIT_USAGE = 65" in after


def test_a_stale_built_file_is_never_served_and_is_said(client, monkeypatch, tmp_path):
    from runs.api import download
    from runs.checks import client_file_current

    stale = tmp_path / "flakeboard_ci.py"
    text = build.assemble().replace("EXIT_USAGE = 64", "EXIT_USAGE = 65")
    stale.write_text(build.stamped(text.replace(
        f'SOURCE_HASH = "{build.build_of(text)}"', build.UNSTAMPED)), encoding="utf-8")
    monkeypatch.setattr(download, "CLIENT_PATH", stale)
    served = client.get("/ci/flakeboard_ci.py").content.decode()
    assert served == build.assemble() and "EXIT_USAGE = 65" not in served
    why = download.stale_file()
    assert why.startswith(f"client/flakeboard_ci.py is build {build.build_of(stale.read_text())}")
    assert "run `make client`" in why
    assert [(w.id, w.msg) for w in client_file_current(None)] == [("runs.W001", why)]


def test_the_board_tells_a_client_of_another_build(client, suite):
    from runs.api.download import served_client
    from tests.api_http import new_token

    headers = {"Authorization": f"Bearer {new_token(suite, 'read')}"}
    served = served_client().build
    same = client.get("/api/v1/token", headers={**headers, "Flakeboard-Client": served})
    assert same["Flakeboard-Client-Served"] == served
    assert "Flakeboard-Client-Notice" not in same
    other = client.get("/api/v1/token", headers={**headers, "Flakeboard-Client": "0" * 16})
    assert other["Flakeboard-Client-Notice"] == (
        f"this client is build {'0' * 16}; the board serves build {served}: fetch it again "
        f"from http://testserver/ci/flakeboard_ci.py")
    ledger = client.get(f"/api/v1/suites/{suite.slug}/ledger",
                        headers={**headers, "Flakeboard-Client": "0" * 16})
    assert ledger.status_code == 200 and "Flakeboard-Client-Notice" in ledger


@pytest.mark.slow
def test_the_client_says_what_the_board_told_it(client_script, live_board, suite, tmp_path):
    """A client fetched before the board's last deploy is told, once, on stderr."""
    from tests.api_http import new_token

    text = client_script.read_text(encoding="utf-8")
    old = tmp_path / "old_flakeboard_ci.py"
    old.write_text(text.replace(f'SOURCE_HASH = "{build.build_of(text)}"',
                                f'SOURCE_HASH = "{"0" * 16}"'), encoding="utf-8")
    env = {"PATH": "/usr/bin:/bin", "FLAKEBOARD_URL": live_board.url,
           "FLAKEBOARD_TOKEN": new_token(suite, "read")}
    for script, told in ((client_script, False), (old, True)):
        done = subprocess.run([sys.executable, str(script), "ledger", "--output",
                               str(tmp_path / "ledger.json")],
                              capture_output=True, text=True, env=env, check=False)
        assert done.returncode == 0, done.stderr
        assert ("the board serves build" in done.stderr) is told
        assert done.stderr.count("fetch it again") == int(told)


def _unbuilt_copy(tmp_path):
    """A copy of the client's sources and the shared rules it is built of, never built."""
    root = tmp_path / "project"
    shutil.copytree(CLIENT, root / "client",
                    ignore=shutil.ignore_patterns("__pycache__", "flakeboard_ci.py"))
    (root / "flakeboard" / "rules").mkdir(parents=True)
    for path in build.shared_rules().values():
        shutil.copy(path, root / "flakeboard" / "rules")
    return root


@pytest.mark.slow
def test_a_bare_pytest_sees_the_sources_as_they_are_now(tmp_path):
    """The session builds the client before it collects: a test module that loads the file
    at import sees an edit under client/src made after the last build (and a checkout that
    never built it collects)."""
    root = _unbuilt_copy(tmp_path)
    core = root / "client" / "src" / "flakeboard_ci" / "core.py"
    core.write_text(core.read_text(encoding="utf-8").replace("EXIT_USAGE = 64",
                                                             "EXIT_USAGE = 65"),
                    encoding="utf-8")
    (root / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    (root / "conftest.py").write_text(
        "from tests.client_build import pytest_sessionstart  # noqa: F401\n",
        encoding="utf-8")
    (root / "test_sees.py").write_text(
        "import importlib.util\n"
        "spec = importlib.util.spec_from_file_location('c', 'client/flakeboard_ci.py')\n"
        "client = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(client)\n\n"
        "def test_sees():\n"
        "    assert client.EXIT_USAGE == 65\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-p", "no:django", "test_sees.py"], cwd=root,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(settings.BASE_DIR)},
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout
    # Our own suite builds it the same way: conftest.py's hook is this one.
    from tests import client_build, conftest
    assert conftest.pytest_sessionstart is client_build.pytest_sessionstart


@pytest.mark.slow
def test_each_module_imports_alone_as_a_package():
    """No import cycle and no missing import: the modules work as the package they are,
    the shared rules' folder on its path as the build reads it."""
    modules = ", ".join(f"flakeboard_ci.{name}" for name, _ in build.MODULES)
    done = subprocess.run([sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, "
                           f"{str(build.PACKAGE.parent)!r}); import flakeboard_ci; "
                           f"flakeboard_ci.__path__.append({str(build.RULES)!r}); "
                           f"import {modules}"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_the_file_starts_with_the_docstring_and_one_sorted_import_block():
    text = build.assemble()
    lines = text.splitlines()
    assert lines[0] == "#!/usr/bin/env python3"
    assert lines[1].startswith('"""Flakeboard\'s CI client')
    assert text.count("from __future__ import annotations") == 1
    imports = [line for line in lines if line.startswith(("import ", "from "))]
    assert imports[0] == "from __future__ import annotations"
    assert imports[1:] == sorted(imports[1:]) and len(set(imports)) == len(imports)
    assert not any(line.startswith("from .") for line in lines)
    separators = [line for line in lines if line.startswith("# --- ") and ".py: " in line]
    assert [line.split()[2] for line in separators] == [
        f"{name}.py:" for name, _ in build.MODULES]
    assert lines[-2:] == ['if __name__ == "__main__":', "    sys.exit(main())"]


@pytest.mark.slow
def test_imports_over_several_lines_are_merged_and_sibling_imports_dropped(sources,
                                                                           tmp_path):
    text = assemble_with(sources, '''"""A module of the test's."""

from __future__ import annotations

import json
import os.path as os_path
from collections import (
    deque,
    OrderedDict,
)
from os.path import abspath, basename, commonpath, dirname, exists, expanduser
from os.path import getmtime, getsize, isdir, islink

from .core import (
    VERSION,
    UsageError,
)


def extra():
    return (json, os_path, deque, OrderedDict, abspath, basename, commonpath, dirname,
            exists, expanduser, getmtime, getsize, isdir, islink, VERSION, UsageError)
''')
    assert "from collections import OrderedDict, deque\n" in text
    assert "import os.path as os_path\n" in text
    assert "from os.path import (\n    abspath,\n    basename,\n" in text  # over 100 long
    assert text.count("\nimport json\n") == 1
    assert "from .core" not in text and "A module of the test's" not in text
    assert "\n# --- extra.py: a module the test adds ---" in text
    assembled = tmp_path / "assembled.py"
    assembled.write_text(text, encoding="utf-8")
    namespace = {"__name__": "assembled"}
    exec(compile(text, str(assembled), "exec"), namespace)  # noqa: S102 (the file just built)
    assert namespace["extra"]()[-2:] == (namespace["VERSION"], namespace["UsageError"])
    ruff = subprocess.run([sys.executable, "-m", "ruff", "check", "--isolated", "--select",
                           "I", "--line-length", "100", str(assembled)],
                          capture_output=True, text=True)
    assert ruff.returncode == 0, ruff.stdout


REFUSED = [
    # A third-party package: the served file must run with nothing installed.
    pytest.param("import requests\n", "extra.py:1 imports requests, which is not in the "
                 "standard library", id="third-party"),
    pytest.param("from django.conf import settings\n", "imports django.conf, which is not",
                 id="third-party-from"),
    pytest.param("def later():\n    import yaml\n\n    return yaml\n",
                 "extra.py:2 imports yaml", id="third-party-in-a-function"),
    # A name of another module: in one namespace, one would replace the other.
    pytest.param("def present(answer, kind, args):\n    return 0\n",
                 "outputs.py and extra.py both define present", id="function"),
    pytest.param("Board = None\n", "board.py and extra.py both define Board", id="assignment"),
    pytest.param("try:\n    pass\nexcept ImportError:\n    spoken = str\n",
                 "ledger.py and extra.py both define spoken", id="in-a-block"),
    pytest.param("def reset():\n    global Z95\n    Z95 = 2.58\n",
                 "stats.py and extra.py both define Z95", id="global"),
    pytest.param("json = None\n", "extra.py defines json, which a module imports by "
                 "`import json`", id="an-imported-module"),
    pytest.param("import json as time\n", "binds time by `import json as time`",
                 id="import-as"),
    # A sibling import the one file cannot do without.
    pytest.param("from .board import Nothing\n", "extra.py imports Nothing from .board, "
                 "which does not define it", id="undefined"),
    pytest.param("from .elsewhere import Board\n", "import names from a sibling module",
                 id="not-a-sibling"),
    pytest.param("from . import board\n", "import names from a sibling module",
                 id="a-module"),
    pytest.param("from .board import Board as B\n", "no `as`, no *", id="renamed"),
    pytest.param("def f():\n    from .board import Board\n\n    return Board\n",
                 "import sibling names at the top of the module", id="in-a-function"),
    pytest.param("import os; X = os.sep\n", "put each import on a line of its own",
                 id="semicolon"),
    pytest.param("from __future__ import annotations, division\n", "annotations` only",
                 id="future"),
]


@pytest.mark.parametrize(("source", "message"), REFUSED)
def test_a_module_that_would_break_the_one_file_is_refused(sources, source, message):
    with pytest.raises(build.BuildError, match=re.escape(message)):
        assemble_with(sources, source)


def test_a_module_that_does_not_parse_is_refused_naming_its_file(sources):
    """The parse is cached by the text alone; its error still names the file."""
    for _ in range(2):
        with pytest.raises(build.BuildError, match=re.escape(
                f"cannot read {sources / 'extra.py'}: invalid syntax (extra.py, line 1)")):
            assemble_with(sources, "def broken(:\n    pass\n")


def test_a_name_used_at_import_time_before_its_module_is_refused(sources):
    """A default argument is read when the file runs: its module must come first."""
    source = ("from .outputs import SUMMARY_LIMIT\n\n\n"
              "def cut(text, limit=SUMMARY_LIMIT):\n    return text[:limit]\n")
    with pytest.raises(build.BuildError, match=re.escape(
            "extra.py uses SUMMARY_LIMIT at import time, but outputs.py comes after it")):
        assemble_with(sources, source, before="outputs")
    # Read only when called, the same name may come from a later module.
    source = ("from .outputs import SUMMARY_LIMIT\n\n\n"
              "def cut(text):\n    return text[:SUMMARY_LIMIT]\n")
    assert "def cut(text):" in assemble_with(sources, source, before="outputs")


def test_a_module_left_out_of_the_list_is_refused(sources):
    (sources / "forgotten.py").write_text('"""Forgotten."""\n', encoding="utf-8")
    with pytest.raises(build.BuildError, match=r"forgotten\.py .* is not in build\.py's MODULES"):
        build.assemble(sources)


def test_check_says_to_run_make_client_and_writing_makes_it_pass(monkeypatch, tmp_path,
                                                                 capsys):
    target = tmp_path / "client" / "flakeboard_ci.py"
    target.parent.mkdir()
    target.write_text(build.assemble().replace("VERSION = ", "VERSION=", 1), encoding="utf-8")
    monkeypatch.setattr(build, "HERE", target.parent)
    monkeypatch.setattr(build, "TARGET", target)
    assert build.main(["--check"]) == 1
    assert "run `make client`" in capsys.readouterr().err
    assert build.main([]) == 0
    assert "wrote client/flakeboard_ci.py" in capsys.readouterr().out
    assert build.main(["--check"]) == 0
    assert target.read_bytes().decode("utf-8") == build.assemble()


def test_the_client_carries_the_boards_rules_as_they_are():
    """One place per rule: the client's gate plan, failure labels and signatures are the
    modules of flakeboard/rules/, each body in the served file as it is there."""
    text, shared = build.assemble(), build.shared_rules()
    carried = {module.name: module for module in build.read_modules(
        build.PACKAGE, build.MODULES, shared) if module.path in shared.values()}
    assert sorted(carried) == ["failure_labels", "gate_plan", "signatures"]
    for module in carried.values():
        assert f"{build.separator(module)}\n\n\n{module.body()}\n" in text
        assert build.RULES / f"{module.name}.py" in build.sources()


def test_a_copy_of_a_shared_rule_is_refused(sources):
    shutil.copy(build.RULES / "signatures.py", sources)
    with pytest.raises(build.BuildError, match=r"copies .* which the build takes as it is"):
        build.assemble(sources)


def test_a_refused_module_fails_the_command_with_its_reason(monkeypatch, sources, capsys):
    (sources / "extra.py").write_text("import requests\n", encoding="utf-8")
    monkeypatch.setattr(build, "PACKAGE", sources)
    monkeypatch.setattr(build, "MODULES", (*build.MODULES, ("extra", "a third-party import")))
    assert build.main(["--check"]) == 2
    assert "extra.py:1 imports requests, which is not in the standard library" in \
        capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.skipif(not PY38.exists(), reason="no Python 3.8 at ~/.pyenv")
def test_the_build_runs_on_python_3_8_and_assembles_the_same_file():
    done = subprocess.run([str(PY38), str(CLIENT / "build.py"), "--check"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "client/flakeboard_ci.py is up to date" in done.stdout


@pytest.mark.slow
def test_the_session_builds_again_only_when_a_source_is_newer_than_the_build(tmp_path):
    from tests.client_build import _built_since_its_sources

    root = _unbuilt_copy(tmp_path)
    copied = root / "client" / "build.py"
    assert _built_since_its_sources(copied) is False  # never built
    subprocess.run([sys.executable, str(copied)], check=True, capture_output=True)
    assert _built_since_its_sources(copied) is True
    rule = root / "flakeboard" / "rules" / f"{build.SHARED_RULES[0]}.py"
    later = (root / "client" / "flakeboard_ci.py").stat().st_mtime + 10
    os.utime(rule, (later, later))
    assert _built_since_its_sources(copied) is False
