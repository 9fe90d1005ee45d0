"""Which modules ``-m`` leaves out before they are imported (tests/lanes.py): only those
whose module-level marks alone deselect every test they hold."""

import pytest

from tests.lanes import left_out, module_marks, pytest_ignore_collect

FAST = "not slow and not browser and not fuzz and not wide"


@pytest.mark.parametrize(
    ("markexpr", "marks", "expected"),
    [
        (FAST, {"slow"}, True),
        (FAST, {"browser", "skipif"}, True),
        (FAST, {"wide"}, True),
        (FAST, {"django_db"}, False),
        (FAST, set(), False),
        ("slow", {"slow"}, False),
        # A test of the module may add the mark the expression asks for.
        ("slow", set(), False),
        ("browser or fuzz", {"django_db"}, False),
        ("not slow or browser", {"slow"}, False),
        ("slow and not fuzz", {"fuzz"}, True),
    ],
)
def test_a_module_is_left_out_only_when_no_test_of_it_can_be_selected(markexpr, marks, expected):
    assert left_out(markexpr, marks) is expected


def test_the_module_marks_are_read_from_its_one_pytestmark():
    source = (
        '"""Doc."""\n\nimport pytest\n\npytestmark = [\n    pytest.mark.slow,\n'
        '    pytest.mark.skipif(True, reason="x"),\n]\n\nMARK = pytest.mark.browser\n'
    )
    assert module_marks(source) == {"slow", "skipif"}
    assert module_marks("import pytest\n\nMARK = pytest.mark.slow\n") is None
    assert module_marks("pytestmark = pytest.mark.fuzz\n") == {"fuzz"}


def test_the_fast_lane_of_the_makefile_is_the_expression_tested_here():
    from django.conf import settings

    makefile = (settings.BASE_DIR / "Makefile").read_text(encoding="utf-8")
    assert f'-m "{FAST}"' in makefile


class Config:
    def __init__(self, markexpr: str):
        self.markexpr = markexpr

    def getoption(self, name, default=None):
        return self.markexpr if name == "markexpr" else default


def test_a_folder_is_left_out_only_when_every_test_module_in_it_is(tmp_path):
    folder = tmp_path / "journeys"
    (folder / "deeper").mkdir(parents=True)
    (folder / "conftest.py").write_text("import pytest\n")
    (folder / "test_a.py").write_text("import pytest\n\npytestmark = pytest.mark.browser\n")
    (folder / "deeper" / "test_b.py").write_text("import pytest\n\npytestmark = pytest.mark.slow\n")
    assert pytest_ignore_collect(folder, Config(FAST)) is True
    assert pytest_ignore_collect(folder, Config("")) is None
    assert pytest_ignore_collect(folder, Config("browser")) is None
    (folder / "deeper" / "test_c.py").write_text("def test_c():\n    pass\n")
    assert pytest_ignore_collect(folder, Config(FAST)) is None
    (tmp_path / "empty").mkdir()
    assert pytest_ignore_collect(tmp_path / "empty", Config(FAST)) is None
