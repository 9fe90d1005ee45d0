"""The sentences that explain a refused value to a person: the rules answer with a
problem code (flakeboard.rules.Problem, ExpiryProblem), and these say it in words."""

from __future__ import annotations

from datetime import date

from flakeboard import rules
from flakeboard.rules import ExpiryProblem, Problem

# What each problem says of a field, after the field's name ("The node id …", "owner …").
_PHRASES = {
    Problem.NOT_A_STRING: "must be a string",
    Problem.REQUIRED: "must not be empty",
    Problem.CONTROL_CHARS: "must not contain control characters",
    Problem.NOT_UNICODE: "must be valid Unicode text (no lone surrogates)",
}


def phrase(problem: Problem, max_length: int) -> str:
    """A problem as a predicate: "must be at most 1000 characters long"."""
    if problem is Problem.TOO_LONG:
        return f"must be at most {max_length} characters long"
    return _PHRASES.get(problem, "is not in the expected form")


def nodeid_message(problem: Problem, nodeid: object) -> str:
    text = phrase(problem, rules.NODEID_MAX_LENGTH)
    if problem is Problem.TOO_LONG:
        text += f" (got {len(nodeid)})"
    return f"The node id {text}."


def owner_message(problem: Problem) -> str:
    if problem is Problem.REQUIRED:
        return "An owner is required: a @handle or an e-mail address."
    if problem is Problem.BAD_FORMAT or problem is Problem.TOO_LONG:
        return "The owner must be a @handle (such as @finley) or an e-mail address."
    return f"The owner {phrase(problem, rules.OWNER_MAX_LENGTH)}."


def evidence_message(problem: Problem) -> str:
    if problem is Problem.REQUIRED:
        return "Evidence is required: a CI run reference or an http(s) URL."
    if problem is Problem.CONTROL_CHARS:
        return "The evidence may not contain control characters or line breaks."
    return f"The evidence {phrase(problem, rules.EVIDENCE_MAX_LENGTH)}."


def digest_phrase(problem: Problem, max_length: int) -> str:
    """What a manifest digest's problem says of the field, after its name."""
    if problem is Problem.BAD_FORMAT:
        return ("must be a digest: hex digits, with or without sha256: before them "
                "(as flakeboard_ci.py pin prints it)")
    return phrase(problem, max_length)


def digest_message(problem: Problem, max_length: int) -> str:
    return f"The manifest digest {digest_phrase(problem, max_length)}."


def pin_message(problem: Problem, max_length: int) -> str:
    """Why a typed fixture pin is refused (``rules.pin_problem``)."""
    if problem is Problem.BAD_FORMAT:
        return (f"The manifest digest must be a SHA-256: {rules.SHA256_HEX_DIGITS} hex digits, "
                f"with or without sha256: before them, as flakeboard_ci.py pin prints it.")
    return digest_message(problem, max_length)


def expiry_message(problem: ExpiryProblem, today: date, max_days: int) -> str:
    _, latest = rules.expiry_bounds(today, max_days)
    if problem is ExpiryProblem.NOT_AFTER_TODAY:
        return f"The expiry must be after today ({today.isoformat()})."
    return f"The expiry may be at most {max_days} days ahead (no later than {latest.isoformat()})."
