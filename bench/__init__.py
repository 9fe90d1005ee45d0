"""Flakeboard's benchmarks: each figure measured against its baseline in the same run.

Run them with ``make bench`` (or ``python -m bench --scale 1``); see docs/benchmarks.md.
"""
