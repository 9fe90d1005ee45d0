"""The bounds every path shares: the form, the uploads, the import and the models."""

NODEID_MAX_LENGTH = 1000
EVIDENCE_MAX_LENGTH = 2000
OWNER_MAX_LENGTH = 254
# Run counts (n, fails): a billion runs is past any real measurement, and fits the
# 32-bit columns that store them.
COUNT_MAX = 1_000_000_000
# A source file's path in an impact map (relative to the repository's root), and how many
# (test, file) pairs one map may hold.
IMPACT_PATH_MAX_LENGTH = 1000
IMPACT_MAX_PAIRS = 2_000_000
# Upload metadata: commit, branch, patch, job.
META_MAX_LENGTH = 200
# The tests an order-dependent measurement names as its cause: one, or those needed together.
CAUSE_NODES_MAX = 20
# Seeds are stored as signed 64-bit integers.
SEED_MIN = -(2**63)
SEED_MAX = 2**63 - 1
# A diagnosis experiment's reproduction command, and the failing seeds one replays.
COMMAND_MAX_LENGTH = 1000
REPLAY_SEEDS_MAX = 10
