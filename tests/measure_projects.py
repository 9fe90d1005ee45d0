"""Generated pytest projects for the tests of ``flakeboard_ci.py measure`` and ``gate``, and
how the tests run measure, gate (and the article's budget script) on them as CI would: in
the project's folder, with a clean environment, the client standard library only
(``-I -S``)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from django.conf import settings

CLIENT = settings.BASE_DIR / "client" / "flakeboard_ci.py"
SCRIPT = Path(__file__).with_name("article_budget_script.py")
SEED_BASE = 9137
TODAY = "2026-10-15"

# Test bodies whose outcome depends only on the run's seed.
SEED = "int(os.environ['PATCH_SEED'])"


def seed_test(name: str, fails_when: str = "False", body: str = "") -> str:
    """A test function that fails when ``fails_when`` (about ``seed``) holds."""
    return (f"def {name}():\n    seed = {SEED}\n{textwrap.indent(body, '    ')}"
            f"    assert not ({fails_when}), seed\n\n\n")


def seeds_failing(fails_when: str, runs: int, base: int = SEED_BASE) -> int:
    """How many of the runs 0..runs-1 fail, computed without running anything."""
    return sum(bool(eval(fails_when, {}, {"seed": base + i})) for i in range(runs))  # noqa: S307


def make_project(root: Path, modules: dict[str, str], targets: list[str] | None = None) -> Path:
    """A project in ``root``: a pytest.ini (so root is pytest's rootdir), the test modules
    (path -> source; ``import os`` is added) and flake_targets.txt when targets are given."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "pytest.ini").write_text("[pytest]\n")
    for path, source in modules.items():
        module = root / path
        module.parent.mkdir(parents=True, exist_ok=True)
        module.write_text("import os\n\n\n" + textwrap.dedent(source))
    if targets is not None:
        (root / "flake_targets.txt").write_text("".join(f"{t}\n" for t in targets))
    return root


def clean_env(**env: str) -> dict[str, str]:
    # No third-party plugins in the workers: this repository's own (django, hypothesis,
    # playwright) would only slow every worker down.
    return {"PATH": "/usr/bin:/bin", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "TODAY": TODAY,
            **env}


def measure(project: Path, *args: str, python: str = sys.executable, timeout: float = 120,
            diagnose: bool = False, **env: str) -> subprocess.CompletedProcess:
    """Run ``flakeboard_ci.py measure ARGS`` in the project, standard library only; the
    diagnosis's experiments only with ``diagnose`` (tests/test_ci_measure_diagnosis.py)."""
    args = args if diagnose else (*args, "--no-diagnose")
    return subprocess.run([python, "-I", "-S", str(CLIENT), "measure", *args], cwd=project,
                          env=clean_env(**env), capture_output=True, text=True,
                          timeout=timeout)


def gate(project: Path, *args: str, python: str = sys.executable,
         **env: str) -> subprocess.CompletedProcess:
    """Run ``flakeboard_ci.py gate ARGS`` in the project with no board, standard library
    only; pytest's cache plugin off, so that the project holds only what gate writes."""
    return subprocess.run([python, "-I", "-S", str(CLIENT), "gate", *args, "-p",
                           "no:cacheprovider"], cwd=project, env=clean_env(**env),
                          capture_output=True, text=True, timeout=120)


def budget_script(project: Path, **env: str) -> subprocess.CompletedProcess:
    """Run the article's budget script (tests/article_budget_script.py) in the project."""
    return subprocess.run([sys.executable, str(SCRIPT)], cwd=project, env=clean_env(**env),
                          capture_output=True, text=True, timeout=600)


def report(project: Path, name: str = "flake-report.json") -> dict[str, dict]:
    """The report measure wrote, by node id."""
    return {row["nodeid"]: row for row in json.loads((project / name).read_text())}


def written(project: Path) -> list[str]:
    """What measure may write: the report and any temporary file of an atomic write."""
    return sorted(p.name for p in project.iterdir()
                  if p.name == "flake-report.json" or p.name.startswith(".flakeboard-"))
