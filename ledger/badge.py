"""The status badge's drawing: a label and a message in two coloured boxes, sized to
their text as it renders in Verdana 11px (widths from a small table, as badges do)."""

from __future__ import annotations

from dataclasses import dataclass

from flakeboard import rules

LABEL = "flake gate"
COLOURS = {True: "#2e7d32", False: "#c62828"}  # passing, failing: white text on both

# Approximate advance widths in pixels of Verdana at 11px.
NARROW, WIDE = set("fijlrt.,:;|!'()[] "), set("mwMW")
PADDING = 6
# A failing badge counts its first cause in a few words.
SHORT = {
    rules.StatusCause.EXPIRED: "expired",
    rules.StatusCause.TIER_VIOLATION: "tier violation",
    rules.StatusCause.OVER_CAP: "over cap",
}


def text_width(text: str) -> int:
    width = 0.0
    for char in text:
        if char in NARROW:
            width += 3.9
        elif char in WIDE:
            width += 10.0
        elif char.isupper() or char.isdigit():
            width += 7.2
        else:
            width += 6.3
    return round(width)


@dataclass(frozen=True)
class Badge:
    label: str
    message: str
    colour: str
    title: str

    @property
    def label_width(self) -> int:
        return text_width(self.label) + 2 * PADDING

    @property
    def message_width(self) -> int:
        return text_width(self.message) + 2 * PADDING

    @property
    def width(self) -> int:
        return self.label_width + self.message_width

    @property
    def label_x(self) -> float:
        return self.label_width / 2

    @property
    def message_x(self) -> float:
        return self.label_width + self.message_width / 2


def status_badge(status: rules.GateStatusNow) -> Badge:
    """"passing", or "failing" with its first cause counted ("failing: 2 expired")."""
    summary = rules.status_summary(status)
    message = "passing"
    if not status.passing:
        first = status.failing_causes[0]
        message = f"failing: {status.causes[first]} {SHORT[first]}"
        if len(status.failing_causes) > 1:
            message += ", …"
    return Badge(LABEL, message, COLOURS[status.passing], f"{LABEL}: {summary}")
