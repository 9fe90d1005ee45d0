"""What the apps' answer schemas share."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Answer(BaseModel):
    """A part of an answer: a plain dict in, every key described, no other allowed. One
    base for every app's answers (the uploads, the JUnit files), so that an answer with a
    key its schema does not describe is refused everywhere, not silently dropped."""

    model_config = ConfigDict(extra="forbid")
