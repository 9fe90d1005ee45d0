"""The junit command: the JUnit XML a CI job already writes, uploaded as passive evidence."""

from __future__ import annotations

import gzip
import json
import os
import sys

from .board import quote, read_upload, suite_slug
from .core import Refused
from .outputs import (
    ANNOTATIONS_SHOWN,
    _print_lines,
    github_data,
    github_property,
    markdown_text,
    node_file,
    output_format,
)

# Where each CI names the branch a job ran on: a pull request's own branch first, then a
# pushed branch's name (GitHub's GITHUB_REF_NAME is "123/merge" for a pull request, which
# GITHUB_HEAD_REF then names, and a tag's name on a tag, which GITHUB_REF_TYPE says).
CI_BRANCH_VARIABLES = ("GITHUB_HEAD_REF", "CI_MERGE_REQUEST_SOURCE_BRANCH_NAME",
                       "CI_COMMIT_BRANCH", "BUILDKITE_BRANCH", "CIRCLE_BRANCH", "BRANCH_NAME")


def ci_branch(environ):
    """The branch the CI job ran on, as its environment names it ("" when it does not)."""
    for name in CI_BRANCH_VARIABLES:
        if environ.get(name):
            return environ[name]
    if environ.get("GITHUB_REF_TYPE") == "branch":
        return environ.get("GITHUB_REF_NAME", "")
    return ""


def cmd_junit(board, args):
    """Upload each JUnit file, gzip-compressed, and print what the board found in it. It is
    evidence, not a gate: exit 0 once every file is stored, 3 or 4 when one could not be."""
    files = [(path, read_upload(path)) for path in args.files]  # all readable first
    slug = suite_slug(board, args.suite)
    branch = args.branch if args.branch is not None else ci_branch(os.environ)
    # An attempt not given is not stated: the board takes 1, or a CI id token's signed one.
    query = {"commit": args.commit, "branch": branch, "job": args.job,
             "attempt": "" if args.attempt is None else str(args.attempt)}
    headers = {"Content-Type": "application/xml", "Content-Encoding": "gzip"}
    answers = []
    for path, raw in files:
        try:
            answer, _ = board.call("POST", f"/api/v1/suites/{quote(slug)}/junit", query=query,
                                   body=gzip.compress(raw, mtime=0), headers=headers)
        except Refused:
            print(f"flakeboard: {path} was not stored"
                  + (f" ({len(answers)} file(s) before it were)" if answers else ""),
                  file=sys.stderr)
            raise
        answers.append((path, answer))
    fmt = output_format(args, os.environ)
    if fmt == "json":
        print(json.dumps([answer for _, answer in answers]))
        return 0
    flaky = sorted({node for _, answer in answers for node in answer["newly_flaky"]})
    if fmt == "markdown":
        sys.stdout.write(junit_markdown(answers, flaky, args.commit))
        return 0
    for path, answer in answers:
        again = " (uploaded before: the stored result)" if answer["duplicate"] else ""
        print(f"{path}: {answer['summary']}{again}")
    for node in flaky:
        print(f"FLAKY {node}")
    if fmt == "github":
        _print_lines(junit_annotations(flaky, args.commit))
        path = os.environ.get("GITHUB_STEP_SUMMARY")
        if path:
            with open(path, "a", encoding="utf-8") as handle:
                handle.write(junit_markdown(answers, flaky, args.commit))
    print(f"{len(answers)} file{'s' if len(answers) != 1 else ''} stored; "
          f"{len(flaky)} test{'s' if len(flaky) != 1 else ''} newly flaky on {args.commit}.")
    return 0


def junit_annotations(flaky, commit):
    """A ::warning per newly flaky test, as many as GitHub shows, then a ::notice of the
    rest."""
    for node in flaky[:ANNOTATIONS_SHOWN]:
        yield (f"::warning file={github_property(node_file(node))},"
               f"title={github_property(f'Flaky test {node}')}::"
               + github_data(f"{node} passed and failed in one job on {commit}"))
    if len(flaky) > ANNOTATIONS_SHOWN:
        yield "::notice::" + github_data(
            f"{len(flaky) - ANNOTATIONS_SHOWN} more newly flaky tests are not annotated "
            f"(GitHub shows {ANNOTATIONS_SHOWN}): they are in the job summary")


def junit_markdown(answers, flaky, commit):
    lines = [f"### Flakeboard: {len(flaky)} test{'s' if len(flaky) != 1 else ''} newly "
             f"flaky on `{markdown_text(commit)}`", ""]
    lines += [f"- {markdown_text(path)}: {markdown_text(answer['summary'])}"
              for path, answer in answers]
    if flaky:
        lines += ["", "| newly flaky test |", "|---|"]
        lines += [f"| {markdown_text(node)} |" for node in flaky]
    return "\n".join(lines) + "\n"
