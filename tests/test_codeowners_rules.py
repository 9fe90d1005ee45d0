"""CODEOWNERS as GitHub reads it (issue 20), pure: the documented example file, pattern by
pattern, then whole; the last matching pattern wins (a property); node ids to paths."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flakeboard import rules
from flakeboard.rules.codeowners import pattern_regex

# GitHub's "About code owners" example file, in its order (the comments shortened).
GITHUB_EXAMPLE = """\
# This is a comment.
*       @global-owner1 @global-owner2
*.js    @js-owner #This is an inline comment.
*.go docs@example.com
*.txt @octo-org/octocats
/build/logs/ @doctocat
docs/*  docs@example.com
apps/ @octocat
/docs/ @doctocat
/scripts/ @doctocat @octocat
**/logs @octocat
/apps/ @octocat
/apps/github
"""

# pattern, path, matches: each documented sentence about a pattern, and its edges.
PATTERNS = [
    ("*", "README.md", True),
    ("*", "deeply/nested/file.py", True),
    ("*.js", "app.js", True),
    ("*.js", "src/ui/app.js", True),
    ("*.js", "app.jsx", False),
    ("*.go", "cmd/main.go", True),
    ("/build/logs/", "build/logs/today.log", True),
    ("/build/logs/", "build/logs/2024/01/today.log", True),
    ("/build/logs/", "src/build/logs/today.log", False),
    ("/build/logs/", "build/logs", False),  # a file named logs is not the directory
    ("docs/*", "docs/getting-started.md", True),
    ("docs/*", "docs/build-app/troubleshooting.md", False),
    ("docs/*", "src/docs/getting-started.md", False),  # a slash inside anchors
    ("apps/", "apps/web/index.js", True),
    ("apps/", "services/apps/web/index.js", True),  # anywhere
    ("apps/", "apps", False),
    ("/docs/", "docs/getting-started.md", True),
    ("/docs/", "docs/build-app/troubleshooting.md", True),
    ("/docs/", "src/docs/readme.md", False),
    ("/scripts/", "scripts/deploy.sh", True),
    ("**/logs", "build/logs/a.log", True),
    ("**/logs", "scripts/logs/a.log", True),
    ("**/logs", "deeply/nested/logs/a/b.log", True),
    ("**/logs", "logs/a.log", True),
    ("**/logs", "catalogs/a.log", False),
    ("/apps/", "apps/github/main.rb", True),
    ("/apps/github", "apps/github/main.rb", True),
    ("/apps/github", "apps/github", True),
    ("/apps/github", "apps/githubber/x", False),
    ("docs", "docs/a.md", True),  # no slash: any depth, a directory's contents too
    ("docs", "src/docs/a.md", True),
    ("docs", "src/docs", True),
    ("a/**/b", "a/b", True),
    ("a/**/b", "a/x/y/b", True),
    ("a/**", "a/x/y", True),
    ("a/**", "a", False),
    ("tests/test_?.py", "tests/test_x.py", True),
    ("tests/test_?.py", "tests/test_xy.py", False),
    ("src/*/test.py", "src/a/b/test.py", False),  # * never crosses a slash
    ("/*", "setup.py", True),
    ("/*", "src/setup.py", False),
    ("\\#notes", "#notes", True),
    ("with\\ space.py", "with space.py", True),
]

# path, the owners the whole example file gives it (the last matching line wins).
WHOLE_FILE = [
    ("README.md", ("@global-owner1", "@global-owner2")),
    ("src/app.js", ("@js-owner",)),
    ("main.go", ("docs@example.com",)),
    ("notes/todo.txt", ("@octo-org/octocats",)),
    ("docs/getting-started.md", ("@doctocat",)),  # /docs/ comes after docs/*
    ("docs/build-app/troubleshooting.md", ("@doctocat",)),
    ("scripts/deploy.sh", ("@doctocat", "@octocat")),
    ("build/logs/today.log", ("@octocat",)),  # **/logs comes after /build/logs/
    ("services/apps/web.py", ("@octocat",)),
    ("apps/web/index.js", ("@octocat",)),
    ("apps/github/main.js", ()),  # unset by the last line
    ("scripts/logs/run.txt", ("@octocat",)),
]


@pytest.mark.parametrize(("pattern", "path", "matches"), PATTERNS)
def test_each_documented_pattern(pattern, path, matches):
    assert (pattern_regex(pattern).match(path) is not None) is matches


@pytest.mark.parametrize(("path", "owners"), WHOLE_FILE)
def test_the_documented_file_whole(path, owners):
    assert rules.parse_codeowners(GITHUB_EXAMPLE).owners_for(path) == owners


def test_the_file_parses_to_its_rules_and_owners():
    parsed = rules.parse_codeowners(GITHUB_EXAMPLE)
    assert len(parsed) == 12
    assert parsed.rules[1].owners == ("@js-owner",)  # the inline comment is not an owner
    assert parsed.rules[-1].owners == ()
    assert "@octo-org/octocats" in parsed.owners and rules.is_team("@octo-org/octocats")
    assert not rules.is_team("docs@example.com")


@pytest.mark.parametrize(("text", "line", "word"), [
    ("*.js @ok\n!*.md @x\n", 2, "negation"),
    ("\n\nsrc/[ab]/ @x\n", 3, "character ranges"),
    ("# c\n*.py not-an-owner\n", 2, "not-an-owner"),
    ("*.py @ok @bad!\n", 1, "@bad!"),
    ("/ @x\n", 1, "names no path"),
])
def test_a_bad_line_is_named(text, line, word):
    with pytest.raises(rules.CodeownersInvalid) as caught:
        rules.parse_codeowners(text)
    [problem] = caught.value.problems
    assert problem.line == line and word in problem.message
    assert str(problem).startswith(f"line {line}: ")


def test_every_bad_line_is_named_at_once():
    with pytest.raises(rules.CodeownersInvalid) as caught:
        rules.parse_codeowners("!a @x\n*.py @ok\n[b] @x\n")
    assert [p.line for p in caught.value.problems] == [1, 3]


def test_blank_lines_comments_and_crlf_are_nothing():
    parsed = rules.parse_codeowners("\ufeff# head\r\n\r\n   \r\n*.py @a # tail\r\n")
    assert [(r.pattern, r.owners, r.line) for r in parsed.rules] == [("*.py", ("@a",), 4)]


@pytest.mark.parametrize(("nodeid", "path"), [
    ("tests/test_x.py::TestY::test_z[a::b]", "tests/test_x.py"),
    ("test_top.py::test_a", "test_top.py"),
    ("tests/test_mod.py", "tests/test_mod.py"),  # a module that failed to collect
    ("./tests/test_x.py::t", "tests/test_x.py"),
    ("src\\test\\FooTest.java::FooTest::testBar", "src/test/FooTest.java"),
    ("com.acme.FooTest::testBar", None),  # no file: no owner
    ("checkout suite::adds an item", None),
    ("/abs/test_x.py::t", None),
    ("../up/test_x.py::t", None),
])
def test_a_node_ids_path(nodeid, path):
    assert rules.node_path(nodeid) == path


def test_a_node_without_a_path_has_no_owner():
    parsed = rules.parse_codeowners("* @everyone\n")
    assert parsed.owners_of_node("com.acme.FooTest::testBar") == ()
    assert parsed.owners_of_node("tests/test_x.py::t") == ("@everyone",)
    assert parsed.rule_for_node("com.acme.FooTest::testBar") is None
    assert parsed.rule_for_node("tests/test_x.py::t").line == 1


def test_owners_compare_without_case():
    assert rules.owner_listed("@Finley", ("@finley", "@org/qa"))
    assert not rules.owner_listed("@fin", ("@finley",))


PATTERN_POOL = ["*", "*.py", "tests/", "/tests/", "tests/*", "**/unit", "unit", "/src/",
                "tests/unit/", "*.js", "/tests/test_a.py", "test_*.py"]
PATHS = ["tests/test_a.py", "tests/unit/test_b.py", "src/unit/x.js", "README.md", "unit"]


@given(st.lists(st.tuples(st.sampled_from(PATTERN_POOL), st.sampled_from(["@a", "@b", ""])),
                max_size=8), st.sampled_from(PATHS))
def test_the_last_matching_pattern_wins(lines, path):
    text = "\n".join(f"{pattern} {owner}".strip() for pattern, owner in lines)
    parsed = rules.parse_codeowners(text)
    matching = [r for r in parsed.rules if r.matches(path)]
    expected = matching[-1].owners if matching else ()
    assert parsed.owners_for(path) == expected
    # A line added at the end that matches decides alone.
    assert rules.parse_codeowners(text + "\n* @last").owners_for(path) == ("@last",)
