"""The rules' numbers that page texts quote, so that a sentence never restates one."""

from __future__ import annotations

from flakeboard import rules


def rule_numbers(request) -> dict:
    return {
        "EXPIRING_WITHIN_DAYS": rules.EXPIRING_WITHIN_DAYS,
        "UPPER95_TOLERANCE": rules.UPPER95_TOLERANCE,
    }
