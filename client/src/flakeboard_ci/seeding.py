"""Each run's randomness from its PATCH_SEED (SPEC 2.4d): Python's ``random`` and, when the
project imported it, numpy's global generator are seeded before a run's setup and again
before its call, as pytest-randomly seeds each test. A run is then the same at its seed
in measure's worker and in a fresh pytest (the replay command): a test that fails on its
random input fails again at that seed."""

from __future__ import annotations

import os
import random
import sys

NUMPY_SEEDS = 2**32  # numpy's legacy seed is a 32-bit number


def seed_run(seed):
    """Seed the run about to start: PATCH_SEED, ``random`` and numpy's global generator."""
    os.environ["PATCH_SEED"] = str(seed)
    random.seed(seed)
    numpy = sys.modules.get("numpy")
    legacy = getattr(getattr(numpy, "random", None), "seed", None)
    if callable(legacy):
        legacy(seed % NUMPY_SEEDS)


def seed_in_force():
    """The PATCH_SEED of the process, or None when it is not a whole number."""
    try:
        return int(os.environ.get("PATCH_SEED", ""))
    except ValueError:
        return None


def tryfirst(hook):
    """Mark a plugin's hook to run before the others of its kind, as pytest.hookimpl's
    tryfirst does (pluggy reads the mark; the served file imports neither)."""
    hook.pytest_impl = {"tryfirst": True, "trylast": False, "wrapper": False,
                        "hookwrapper": False, "optionalhook": False, "specname": None}
    return hook


class Seeder:
    """The plugin that seeds each run from its PATCH_SEED before its setup and its call.
    It acts around a run, but the same for every run: runs in a row may share pytest's
    protocol with it (measure_batch.py seeds each of them before its call)."""

    shares_the_protocol = True

    @tryfirst
    def pytest_runtest_setup(self, item):
        self._seed()

    @tryfirst
    def pytest_runtest_call(self, item):
        self._seed()

    @staticmethod
    def _seed():
        seed = seed_in_force()
        if seed is not None:
            seed_run(seed)
