"""What a diagnosis (SPEC 2.4d, ``rules.diagnosis``) is made from: the client's experiments
on a node's latest measurement, the measurement's own classification, and what CI's JUnit
files show of the node."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SeedReplay:
    """The failing seeds replayed (each twice, in fresh processes) and as many passing
    seeds replayed as controls."""

    seeds: tuple[int, ...]
    controls: tuple[int, ...]
    seed_runs: int
    seed_fails: int
    control_runs: int
    control_fails: int
    command: str | None = None


@dataclass(frozen=True)
class LoadBlock:
    """The measurement's own runs (idle) against a block of runs under CPU load."""

    idle_n: int
    idle_fails: int
    load_n: int
    load_fails: int
    command: str | None = None


@dataclass(frozen=True)
class Experiments:
    seeded: SeedReplay | None = None
    load: LoadBlock | None = None
    skipped: str | None = None  # one of SKIPPED

    @classmethod
    def from_wire(cls, data: dict | None) -> Experiments | None:
        """The upload's ``experiments`` object, as stored (already validated)."""
        if not data:
            return None
        seeded, load = data.get("seeded"), data.get("load")
        return cls(
            seeded=None if seeded is None else SeedReplay(
                **{**seeded, "seeds": tuple(seeded["seeds"]),
                   "controls": tuple(seeded["controls"])}),
            load=None if load is None else LoadBlock(**load),
            skipped=data.get("skipped"),
        )


@dataclass(frozen=True)
class MeasuredFacts:
    """The node's latest measurement: its classification (a ``Classification`` value, or
    None), the cause of an order_dependent one as the board words it, and its experiments."""

    classification: str | None = None
    cause: str | None = None
    experiments: Experiments | None = None


@dataclass(frozen=True)
class JobFigures:
    """The node's runs and flaky failures in one CI job (its name; "" for none)."""

    job: str
    runs: int
    flaky_failures: int


@dataclass(frozen=True)
class RatePair:
    """At the commits the node was measured at and CI ran it: CI's runs and failures,
    and the measured runs and fails."""

    ci_runs: int
    ci_failures: int
    measured_runs: int
    measured_fails: int


@dataclass(frozen=True)
class CiFacts:
    """What CI's JUnit files show of the node: per job, and against its measurements; its
    failures by signature (signature, failures)."""

    jobs: tuple[JobFigures, ...] = ()
    rates: RatePair | None = None
    signatures: tuple[tuple[str, int], ...] = ()
