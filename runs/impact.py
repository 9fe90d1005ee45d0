"""A suite's impact map (SPEC 2.4c): which source files each test executed, as the gate on
the default branch recorded them (``gate --record-impact``), and the tests that execute
any of a pull request's changed files.

The board keeps one map per suite, the latest, replaced whole: a map is one run's, at one
commit, so a test that was deleted or no longer executes a file does not linger in it, and
the answer never mixes the code of two commits. Its rows are (suite, node, path), asked by
(suite, path key)."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from pydantic import TypeAdapter, ValidationError

from flakeboard import rules
from ledger import messages, refusals
from ledger.locks import lock_suite
from ledger.models import Suite, text_key
from ledger.refusals import Code, UploadInvalid, WireProblem, kind_of, shown
from ledger.wire import Commit

from .models import ImpactMap, ImpactPath

CommitField = TypeAdapter(Commit)
FIELDS = ("commit", "map")
# How many paths one query of the map names in one SQL IN (SQLite's variables included).
QUERY_CHUNK = 500


@dataclass(frozen=True)
class ImpactUpload:
    commit: str
    impact: dict[str, list[str]]  # node id -> its sorted, distinct source paths


def path_problem(path: object) -> str | None:
    """Why a map's path is refused, as a predicate; None when it is a relative path."""
    if not isinstance(path, str):
        return f"must be a string (got {kind_of(path)})"
    if path == "":
        return "must not be blank"
    if (problem := rules.label_problem(path, rules.IMPACT_PATH_MAX_LENGTH)) is not None:
        return messages.phrase(problem, rules.IMPACT_PATH_MAX_LENGTH)
    if path.startswith("/") or "\\" in path or ".." in path.split("/"):
        return "must be a path relative to the repository's root, with forward slashes"
    return None


def node_problems(row: int, node: str, paths: object) -> list[WireProblem]:
    """What is wrong with one entry of the map: its node id, then its paths."""
    found = []
    if (problem := rules.nodeid_problem(node)) is not None:
        found.append(WireProblem(Code.INVALID_NODEID, f"node {shown(node)} "
                                 f"{messages.phrase(problem, rules.NODEID_MAX_LENGTH)}",
                                 row, "node"))
    if not isinstance(paths, list):
        found.append(WireProblem(Code.WRONG_TYPE, f"node {shown(node)}: its paths must be a "
                                 f"list (got {kind_of(paths)})", row, "paths"))
        return found
    for index, path in enumerate(paths):
        if (why := path_problem(path)) is not None:
            code = Code.WRONG_TYPE if not isinstance(path, str) else Code.INVALID_VALUE
            found.append(WireProblem(code, f"node {shown(node)}: path {index} {why}", row,
                                     "paths"))
    return found


def parse_impact(body: bytes, max_nodes: int) -> ImpactUpload:
    """The upload, whole: ``{"commit": ..., "map": {node: [path, ...]}}``; UploadInvalid
    naming each refused node (its index in the map as the row) and field."""
    data = refusals.load_json(body)
    if not isinstance(data, dict) or not isinstance(data.get("map"), dict):
        got = kind_of(data.get("map")) if isinstance(data, dict) else kind_of(data)
        raise UploadInvalid("validation_failed", [WireProblem(
            Code.INVALID_SHAPE, f"the body must be an object whose 'map' is an object of "
            f"node ids to lists of paths (got {got})", None, "map")])
    found = [WireProblem(Code.INVALID_VALUE, f"{shown(key)} is not a field of an impact map "
                         f"(its fields: commit, map)", None, str(key))
             for key in data if key not in FIELDS]
    try:
        commit = CommitField.validate_python(data.get("commit", ""))
    except ValidationError as exc:
        commit = ""
        found += [WireProblem(p.code, p.message, None, "commit") for p in refusals.problems(exc)]
    impact = data["map"]
    refusals.refuse_too_many(list(impact), "nodes", max_nodes, "map")
    pairs = 0
    for row, (node, paths) in enumerate(impact.items()):
        found += node_problems(row, node, paths)
        pairs += len(paths) if isinstance(paths, list) else 0
        if len(found) >= refusals.MAX_ERRORS:
            break
    if found:
        raise UploadInvalid("validation_failed", found)
    if pairs > rules.IMPACT_MAX_PAIRS:
        raise UploadInvalid(Code.TOO_MANY_RECORDS.value, [WireProblem(
            Code.TOO_MANY_RECORDS, f"the map holds {pairs:,} (test, path) pairs, over the "
            f"limit of {rules.IMPACT_MAX_PAIRS:,}", None, "map")])
    return ImpactUpload(commit, {node: sorted(set(paths)) for node, paths in impact.items()})


def impact_map_set(*, suite: Suite, upload: ImpactUpload, now) -> ImpactMap:
    """Replace the suite's impact map with the upload's, in one transaction under the
    suite's lock."""
    with transaction.atomic():
        lock_suite(suite.pk)
        ImpactPath.objects.filter(suite=suite).delete()
        ImpactPath.objects.bulk_create(
            (ImpactPath(suite=suite, node=node, path=path)
             for node, paths in upload.impact.items() for path in paths),
            batch_size=2000,
        )
        paths = len({path for paths in upload.impact.values() for path in paths})
        stored, _ = ImpactMap.objects.update_or_create(suite=suite, defaults={
            "commit": upload.commit, "recorded_at": now, "nodes": len(upload.impact),
            "paths": paths})
    return stored


def tests_executing(suite: Suite, paths: list[str]) -> dict[str, list[str]]:
    """The suite's tests that executed any of ``paths``, by the map: node id -> the paths of
    them it executed (sorted), the nodes sorted."""
    wanted = set(paths)
    keys = sorted({text_key(path) for path in wanted})
    found: dict[str, set[str]] = {}
    for start in range(0, len(keys), QUERY_CHUNK):
        rows = ImpactPath.objects.filter(suite=suite,
                                         path_key__in=keys[start:start + QUERY_CHUNK])
        for node, path in rows.values_list("node", "path"):
            if path in wanted:  # the key's text, not another path of the same key
                found.setdefault(node, set()).add(path)
    return {node: sorted(found[node]) for node in sorted(found)}


def map_described(stored: ImpactMap) -> dict:
    """A stored map as the answers describe it: its commit, when it was recorded and its
    size."""
    return {"commit": stored.commit, "recorded_at": stored.recorded_at, "nodes": stored.nodes,
            "paths": stored.paths}


def impact_summary(suite: Suite) -> dict | None:
    """The suite's map as the answers describe it; None when the suite has none."""
    stored = ImpactMap.objects.filter(suite=suite).first()
    return None if stored is None else map_described(stored)
