"""One colour scale: a reason code is drawn in the tone of the outcome its gate gives it
(FAIL/REJECT red, WARN/HOLD amber, OK/ACCEPT green) on every chart of the trends page and
on the batch page's bars; the tones are CSS custom properties that pass the contrast
checks."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.urls import reverse

from flakeboard.rules import GateStatus, Verdict
from flakeboard.rules.trends import Gate, Tone, outcome_of
from runs.models import ReasonRollup
from runs.trend_counts import SOURCES
from tests.test_batch_page import batch, build_world  # noqa: F401 - a fixture, its world
from tests.test_trends import page_charts

CSS = (Path(__file__).resolve().parents[1] / "static" / "css" / "board.css").read_text()
# The scale itself, as the issue states it.
TONE_OF = {
    Verdict.REJECT: "fail", GateStatus.FAIL: "fail",
    Verdict.HOLD: "warn", GateStatus.WARN: "warn",
    Verdict.ACCEPT: "ok", GateStatus.OK: "ok",
}
KEYS = {"verdicts": "verdicts", "reports": "budget"}


def expected(gate: Gate, reason: str) -> str:
    return TONE_OF[outcome_of(gate)[reason]]


@pytest.fixture
def every_reason(suite, today):
    """A count of every reason code of each source, today."""
    for source, gate in SOURCES.items():
        for i, reason in enumerate(gate.reasons):
            ReasonRollup.objects.create(suite=suite, day=today, source=source, reason=reason,
                                        count=i + 1)
    return suite


def test_every_reason_series_is_drawn_in_its_outcomes_tone(client_for, viewer, every_reason):
    url = reverse("trends", args=[every_reason.slug])
    response = client_for(viewer).get(url, {"range": "7", "with_clean": "1"})
    specs, _ = page_charts(response.content.decode())
    for source, gate in SOURCES.items():
        key = KEYS[source]
        paints = {}
        for chart in (key, f"{key}-cumulative"):
            datasets = specs[chart]["datasets"]
            assert {d["label"] for d in datasets} == set(gate.reasons)
            for dataset in datasets:
                assert dataset["tone"] == expected(gate, dataset["label"]), (chart, dataset)
                paint = (dataset["tone"], dataset["shade"])
                assert paints.setdefault(dataset["label"], paint) == paint  # same on each
        distribution = specs[f"{key}-distribution"]
        for label, tone in zip(distribution["labels"], distribution["tones"], strict=True):
            assert tone["tone"] == expected(gate, label)
            assert (tone["tone"], tone["shade"]) == paints[label]
        # Two codes of one tone are told apart by their shades.
        assert len(set(paints.values())) == len(paints)


def test_the_batch_bars_are_in_their_reasons_tones(client_for, viewer, suite, batch):  # noqa: F811
    html = client_for(viewer).get(reverse("batch", args=[suite.slug, batch.pk])).content.decode()
    counts = html[html.index('id="counts-heading"'):html.index('id="table-heading"')]
    bars = re.findall(r'<tr data-status="(\w+)"><td><a href="\?reason=(\w+)"', counts)
    assert {reason for _, reason in bars} == set(batch.reason_counts)
    assert {reason for tone, reason in bars if tone == "fail"} == {"property_fail"}
    for tone, reason in bars:
        assert tone == expected(Gate.ARBITER, reason), reason
    # Every tone a bar may take is coloured by the style sheet.
    for tone in Tone:
        assert f'[data-status="{tone}"] meter {{ --meter: var(--tone-{tone}); }}' in CSS


def _luminance(color: str) -> float:
    if len(color) == 4:  # #rgb
        color = "#" + "".join(c * 2 for c in color[1:])
    channels = [int(color[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(a: str, b: str) -> float:
    light, dark = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def _property(name: str) -> str:
    return re.search(rf"--{name}:\s*([^;]+);", CSS).group(1).strip()


@pytest.mark.parametrize("tone", list(Tone))
def test_every_shade_stands_out_against_cards_and_page(tone):
    shades = _property(f"tone-{tone}-shades").split()
    # Enough shades for the codes of this tone on either gate.
    most = max(sum(1 for r in gate.reasons if TONE_OF[outcome_of(gate)[r]] == tone)
               for gate in Gate)
    assert len(set(shades)) >= most
    for shade in shades:
        for background in (_property("card"), _property("bg")):
            assert contrast(shade, background) >= 3, (shade, background)
