"""The CI client's escaping and limits, called directly: Markdown made inert, GitHub's
workflow-command escaping, GitLab's section markers, and the job summary kept under the
1 MiB GitHub takes from a step."""

from __future__ import annotations

import pytest

from tests.ci_client_view import first_paragraph, load_client, markdown_tables

client = load_client()
URL = "http://board.example/suites/acme/reports/7/"

# Each would turn into markup, a cell boundary or a line end if it were not escaped.
HOSTILE = [
    "a|b", "`code`", "``", "**bold** _em_ *x*", "[link](http://e.example/)", "<b>html</b>",
    "<http://auto.example>", "&amp; &lt; &#35;", "# heading", "- item", "1. item", "> quote",
    "    indented code", "---", "trailing  ", "back\\slash \\| \\n", "line\nfeed", "cr\r",
    "~~strike~~", "![img](x.png)", "www.example.com", "a\\", "  ", "x[1]{2}(3)", "\u2028",
    "\ttab ",
    "tests/test_x.py::TestY::test_z[p-|-`-*-_-[-]-<->-&-#-\\-\n]",
]


def shown(text):
    """What a reader should see: the text, with line ends as the two characters \\n."""
    return text.replace("\n", "\\n").replace("\r", "\\r")


@pytest.mark.parametrize("text", HOSTILE)
def test_markdown_text_is_inert_in_a_paragraph_and_in_a_table_cell(text):
    escaped = client.markdown_text(text)
    assert "\n" not in escaped and "\r" not in escaped
    assert first_paragraph(f"x{escaped}x\n") == f"x{shown(text)}x"
    table = f"| node | status |\n|---|---|\n| {escaped} | FAIL |\n"
    assert markdown_tables(table) == [[[shown(text), "FAIL"]]]


def rows(n, width=1000):
    return [client.Row(f"tests/t.py::test_long[{i}-{'|' * width}]", "FAIL", "over_budget", [],
                       "", None) for i in range(n)]


def summary(rows, **kwargs):
    answer = {"url": URL, "exit_code": 1}
    return client.markdown_summary(answer, "report", rows, ("report FAIL", "over_budget",
                                                  f"{len(rows)} measurements"), **kwargs)


def test_a_summary_over_1_mib_is_cut_with_a_row_saying_how_many_were_left_out():
    many = rows(600)  # each row's node id takes 2 KB escaped: 1.2 MB in all
    text = summary(many)
    assert len(text.encode()) <= 1024 * 1024
    assert first_paragraph(text) == (
        "Flakeboard: report FAIL (over_budget) \u2014 600 measurements; exit code 1")
    table = markdown_tables(text)[1]
    listed = table[:-1]
    assert 400 < len(listed) < 600
    assert [row[0] for row in listed] == [r.node for r in many[:len(listed)]]
    assert table[-1][0] == f"\u2026 {600 - len(listed)} more rows left out: see the board"
    assert f"[upload]({URL})" in text.split("\n")[-3]


def test_a_summary_that_fits_is_not_cut():
    few = rows(3)
    text = summary(few)
    assert [row[0] for row in markdown_tables(text)[1]] == [r.node for r in few]
    assert "left out" not in text


def test_the_verdict_line_stays_when_nothing_else_fits():
    text = summary(rows(5), limit=10)
    assert first_paragraph(text).startswith("Flakeboard: report FAIL (over_budget)")
    assert markdown_tables(text)[1] == [
        ["\u2026 5 more rows left out: see the board", "", "", "", "upload"]]


@pytest.mark.parametrize(("text", "data", "prop"), [
    ("100% [done]", "100%25 [done]", "100%25 [done]"),
    ("a::b, c", "a::b, c", "a%3A%3Ab%2C c"),
    ("line\r\nfeed", "line%0D%0Afeed", "line%0D%0Afeed"),
    ("%0A is not a newline", "%250A is not a newline", "%250A is not a newline"),
    ("esc\\n [x] = y", "esc\\n [x] = y", "esc\\n [x] = y"),
])
def test_github_escaping(text, data, prop):
    assert client.github_data(text) == data
    assert client.github_property(text) == prop


def test_gitlab_sections_have_the_exact_markers(capsys, monkeypatch):
    monkeypatch.setattr(client.time, "time", lambda: 1700000000.5)
    with client.gitlab_section("flakeboard_report_passing", "3 OK", collapsed=True):
        print("inside")
    assert capsys.readouterr().out == (
        "\x1b[0Ksection_start:1700000000:flakeboard_report_passing[collapsed=true]\r\x1b[0K"
        "3 OK\ninside\n\x1b[0Ksection_end:1700000000:flakeboard_report_passing\r\x1b[0K\n")


@pytest.mark.parametrize(("node", "file"), [
    ("tests/test_x.py::TestY::test_z[p]", "tests/test_x.py"),
    ("tests/test_x.py::test_z[a::b]", "tests/test_x.py"),
    ("a::x", "a"),
    ("no_separator", "no_separator"),
])
def test_the_file_of_a_node_is_its_part_before_the_first_separator(node, file):
    assert client.node_file(node) == file


def test_markdown_text_html_escapes_and_backslash_escapes():
    assert client.markdown_text("<a|b> & *c*\n") == "&lt;a\\|b&gt; &amp; \\*c\\*\\\\n"
