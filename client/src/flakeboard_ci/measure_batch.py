"""A worker's runs of one test in a row, under one pass of pytest's protocol: its setup,
then each run's call in turn, then its teardown. For a test whose runs would each pass through
pytest's protocol with nothing made anew for them, a run then costs its call, not the
protocol's reports, captures and hooks around it.

Such a test is a plain test function or method:
- none of its fixtures is made anew for each run (function-scoped), other than its own
  parameters;
- no skip, skipif or xfail mark, which pytest evaluates for each run;
- no plugin or conftest.py outside pytest's own (and measure's seeding) that acts around a
  run: setting it up, calling it, tearing it down or making its report; one that only reads
  the reports (a ``pytest_runtest_logreport``) is no reason, and sees one report for the
  runs in a row;
- no ``faulthandler_timeout``, which would time the row as one test.

Each run is still called as pytest calls it (``pytest_pyfunc_call``), with its own
PATCH_SEED (and ``random`` seeded from it, seeding.py) and, for a method, a new instance of
its class; a run that raises is reported as pytest reports it
(``pytest_runtest_makereport``), so pytest.skip and pytest.xfail are not failures. What
fails outside the runs is the last run's (a teardown, a phase's warning made an error), or
each run's when the setup fails, as it would fail each run's setup."""

from __future__ import annotations

import sys

from .seeding import seed_run

# The hooks that act around a run. Only pytest's own implementations of them may be shared.
AROUND_A_RUN = ("pytest_runtest_protocol", "pytest_runtest_setup", "pytest_runtest_call",
                "pytest_runtest_teardown", "pytest_runtest_makereport", "pytest_pyfunc_call",
                "pytest_fixture_setup", "pytest_fixture_post_finalizer")
EVALUATED_MARKS = ("skip", "skipif", "xfail")
PARAMETER = "get_direct_param_fixture_func"  # pytest's fixture for a parametrize argument


def own_protocol_reason(item):
    """Why each run of ``item`` needs a pass of pytest's protocol of its own, or "" when
    its runs in a row can share one."""
    Function = loaded("_pytest.python").Function
    if not isinstance(item, Function) or type(item).runtest is not Function.runtest:
        return f"it is a {type(item).__name__}, not a plain test function"
    for name in EVALUATED_MARKS:
        if item.get_closest_marker(name) is not None:
            return f"its {name} mark is evaluated for each run"
    definitions_of = item._fixtureinfo.name2fixturedefs
    for name in item.fixturenames:  # its own first, then what they ask for
        for definition in definitions_of.get(name, ()):
            per_run = definition.scope == "function"
            if per_run and getattr(definition.func, "__name__", "") != PARAMETER:
                return f"its fixture {name} is made anew for each run"
    if "request" in item.fixturenames:
        return "it asks for its request"
    for hook in AROUND_A_RUN:
        for impl in getattr(item.ihook, hook).get_hookimpls():
            where = plugin_name(impl.plugin)
            ours = getattr(impl.plugin, "shares_the_protocol", False)
            if not where.startswith("_pytest.") and not ours:
                return f"{where} implements {hook}"
    if float(item.config.getini("faulthandler_timeout") or 0) > 0:
        return "faulthandler_timeout times each test"
    return ""


def loaded(module):
    """One of pytest's own modules, from the pytest process this runs in (the served file
    imports nothing beyond the standard library)."""
    return sys.modules[module]


def plugin_name(plugin):
    name = getattr(plugin, "__name__", None)
    return name if isinstance(name, str) else type(plugin).__module__


class RunsInARow:
    """The ``runtest`` of an item whose runs share a pass of pytest's protocol: it calls
    the test for its first task, then for each next one ``follow`` hands it. Each run is
    answered (``answer``) as the next begins, so that measure's clock runs for the run
    under way, and the last once the protocol has ended, so that a failure after the last
    run is its own."""

    def __init__(self, item, first, follow, answer):
        self.item, self.follow, self.answer = item, follow, answer
        self.task, self.pending, self.ran = first, None, False

    def runtest(self):
        Exit = loaded("_pytest.outcomes").Exit
        CallInfo = loaded("_pytest.runner").CallInfo
        item = self.item
        call_test = item.ihook.pytest_pyfunc_call  # as Function.runtest calls it
        while self.task is not None:
            self._flush()
            tag, _node, seed = self.task
            seed_run(seed)  # as the Seeder seeds a run before its call
            if self.ran and item.instance is not None:
                for cached in ("_obj", "_instance"):  # each run its own instance
                    item.__dict__.pop(cached, None)
            self.ran = True
            call = CallInfo.from_call(lambda: call_test(pyfuncitem=item), when="call",
                                      reraise=(Exit, KeyboardInterrupt))
            failed, detail = False, ""
            if call.excinfo is not None:
                report = item.ihook.pytest_runtest_makereport(item=item, call=call)
                failed, detail = report.failed, failure_line(report) if report.failed else ""
            self.pending = {"tag": tag, "failed": failed, "seconds": call.duration,
                            "detail": detail}
            self.task = self.follow()

    def finish(self, reports):
        """Answer what is left once the protocol has ended, given its reports."""
        failed = [report for report in reports if report.failed]
        if self.pending is None:  # its setup failed or skipped: no run began
            self.pending = {"tag": self.task[0], "failed": False, "seconds": 0.0,
                            "detail": ""}
        self.pending["seconds"] += sum(report.duration for report in reports
                                       if report.when != "call")
        if failed and not self.pending["failed"]:
            self.pending.update(failed=True, detail=failure_line(failed[0]))
        self._flush()

    def _flush(self):
        if self.pending is not None:
            self.answer(self.pending)
            self.pending = None


def failure_line(report):
    """The line of a failed report that says what went wrong."""
    text = getattr(report, "longreprtext", "") or str(report.longrepr or "")
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line[1:].strip() for line in lines if line.startswith("E ")]
    return (errors[0] if errors else lines[-1] if lines else "failed")[:300]
