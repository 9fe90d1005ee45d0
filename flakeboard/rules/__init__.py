"""The rules of the gate (SPEC section 2), with no Django in sight.

Every decision the board makes is taken in this package, one concept a module:

- ``vocab``: verdicts, statuses, reason codes, signal values, classifications, entry
  states, tiers;
- ``limits``: the bounds every input path shares;
- ``stats``: the Wilson bound (2.1) and Fisher's exact test (2.4d);
- ``windows``: a window of days relative to today, the shape of every date predicate;
- ``entries``: entry states, what is live, expiry bounds;
- ``share``: the known-node window, the quarantined share and its cap (2.2);
- ``tiers``: tier resolution and what may be quarantined (2.5);
- ``budget``: the budget gate for a measurement and a report (2.2);
- ``codeowners``: who owns a path by a CODEOWNERS file (GitHub's rules);
- ``clearance``: when an entry is ready to clear, and what a fresh measurement needs;
- ``worsening``: whether a quarantined node's rate has got worse since its entry was made;
- ``arbiter``: effective signals, the precedence table and the batch aggregate (2.3);
- ``attempts``: evidence at one commit accumulates: attempts merge, measurements pool (2.4a);
- ``infrastructure``: when a JUnit file or a gate attempt failed for its runner, not its
  tests: never flaky evidence (2.4a);
- ``new_tests``: which nodes are new at a commit (2.4b);
- ``failure_labels``: the one line that explains each failed node of a gate to its author;
- ``gate_plan``: what a patch's gate measures, in which order, within its budget (2.4c);
- ``diagnosis``: why a flaky node is flaky, with its evidence and reproduction (2.4d), from
  ``diagnosis_facts``; ``network``: failures that name the network or a service;
- ``policy_bounds``: the default and the range of each policy number;
- ``status``: whether the suite's gate passes now, and why not;
- ``text``: counts in words (one plural rule);
- ``checks``: node id, label, owner and evidence checks;
- ``digests``: a fixture manifest digest in its one canonical form (2.3);
- ``commits``: a commit in its one canonical form (2.4a);
- ``trust``: which uploads may size the test set (docs/trusted-ci.md);
- ``written``: how pytest writes a node id in JUnit XML, the form a testcase finds it by.

Nothing here reads the clock: callers pass ``today`` (a UTC date).
"""

from .arbiter import (
    PRECEDENCE,
    PRECEDENCE_ORDER,
    ArbiterOutcome,
    FixturePin,
    SignalRecord,
    aggregate,
    aggregate_reason,
    arbitrate,
    effective_fixture_lock,
    effective_flake_status,
    evaluate_record,
    record_flags,
)
from .attempts import (
    NodeAttempts,
    PooledCounts,
    SeededCounts,
    add_attempt,
    judge_attempts,
    merge_attempts,
    pool_measurements,
)
from .budget import (
    BudgetOutcome,
    Policy,
    ReportOutcome,
    gate_measurement,
    gate_report,
    policy_hash,
    policy_numbers,
    within_budget,
)
from .checks import (
    Problem,
    evidence_is_link,
    evidence_problem,
    has_control_chars,
    is_unicode,
    label_problem,
    nodeid_problem,
    owner_problem,
)
from .ci_run import (
    CI_RUN_WINDOW,
    CI_RUNS_READ,
    DEFAULT_BRANCH,
    MATRIX_SETTLES,
    branch_problem,
    sizing_run,
    sizing_run_on,
)
from .clearance import (
    CLEAR_AFTER_DEFAULT,
    CLEAR_AFTER_MAX,
    NOT_A_FIX,
    RECENT_MEASUREMENTS,
    ClearanceOutlook,
    allowed_failures,
    clean_measurement,
    clean_streak,
    clearance_outlook,
    is_measurement,
    last_ci_failure,
    pass_chance,
    ready_to_clear,
    recent_rate,
    step_report,
    trail_after,
    trail_after_ci_failure,
    trail_reports,
)
from .codeowners import (
    CODEOWNERS_MAX_BYTES,
    Codeowners,
    CodeownersInvalid,
    CodeownersRule,
    codeowners_of,
    is_team,
    node_path,
    owner_listed,
    parse_codeowners,
)
from .commits import canonical_commit
from .diagnosis import (
    DIAGNOSED_CLASSIFICATIONS,
    JOB_SPECIFIC_MIN_FAILURES,
    SIGNIFICANCE,
    SKIPPED,
    Category,
    Diagnosis,
    diagnose,
    needs_diagnosis,
)
from .diagnosis_facts import (
    CiFacts,
    Experiments,
    JobFigures,
    LoadBlock,
    MeasuredFacts,
    RatePair,
    SeedReplay,
)
from .diagnosis_words import CATEGORY_WORDS, CategoryWords
from .digests import (
    DIGEST_PREFIX,
    SHA256_HEX_DIGITS,
    canonical_digest,
    digest_key,
    digest_problem,
    pin_problem,
    same_digest,
)
from .entries import (
    EXPIRING_WITHIN_DAYS,
    LIVE,
    STATE_WINDOWS,
    EntryFacts,
    ExpiryProblem,
    entry_age_days,
    entry_is_live,
    entry_state,
    expiry_bounds,
    expiry_problem,
    expiry_window,
    renewal_revives,
)
from .failure_labels import (
    DEFAULT_FAILURES_SHOWN,
    FAILURE_LABELS,
    FailureEvidence,
    FailureLabel,
    failure_label,
)
from .gate_plan import (
    EVERY_NODE,
    GATE_PLAN_GROUPS,
    MEASURE_BUDGET_MAX_SECONDS,
    MEASURE_BUDGET_MIN_SECONDS,
    MEASURE_BUDGET_SECONDS,
    MEASURED_BECAUSE,
    RUN_OVERHEAD_SECONDS,
    GatePlan,
    PlanCandidate,
    PlannedNode,
    gate_plan,
    in_changed_file,
    plan_group,
)
from .infrastructure import (
    INFRASTRUCTURE_MIN_TESTS,
    ONE_SIGNATURE_MIN_FAILURES,
    FailingTests,
    InfrastructureReason,
    attempt_infrastructure,
    failing_records,
    infrastructure_reason,
    one_signature,
)
from .limits import (
    CAUSE_NODES_MAX,
    COMMAND_MAX_LENGTH,
    COUNT_MAX,
    EVIDENCE_MAX_LENGTH,
    IMPACT_MAX_PAIRS,
    IMPACT_PATH_MAX_LENGTH,
    META_MAX_LENGTH,
    NODEID_MAX_LENGTH,
    OWNER_MAX_LENGTH,
    REPLAY_SEEDS_MAX,
    SEED_MAX,
    SEED_MIN,
)
from .network import NETWORK_PATTERNS, names_network
from .new_tests import (
    BEFORE_RECORD,
    NEW_TEST_MAX_RUNS,
    NEW_TEST_MIN_RUNS,
    NEW_TEST_RUNS,
    NEW_TEST_SHARE,
    always_failing,
    birth_sentence,
    catch_chance,
    first_commit_after,
    flaky_at_birth,
    is_new,
    passes_the_guard,
)
from .policy_bounds import POLICY_BOUNDS, POLICY_DEFAULTS, PolicyBound
from .share import (
    KNOWN_NODE_WINDOW,
    KNOWN_NODE_WINDOW_DAYS,
    CiRunFacts,
    ShareFigures,
    SizeSource,
    node_is_known,
    quarantined_share,
    share_over_cap,
    share_over_limit,
    size_words,
)
from .stats import (
    UPPER95_TOLERANCE,
    Z95,
    fisher_greater,
    lower95,
    runs_needed,
    upper95,
    upper95_mismatch,
)
from .status import GateStatusNow, StatusCause, cause_text, status_summary
from .text import plural
from .tiers import (
    MIN_QUARANTINABLE_TIER,
    TierResolution,
    TierRuleSpec,
    quarantinable,
    resolve_tier,
    tier_disagrees,
)
from .trust import (
    GITHUB_ISSUER,
    SIGNED_CREDENTIALS,
    TEST_SET_UNTRUSTED,
    TRUSTED_CREDENTIALS,
    Credential,
    Issuer,
    SignedFacts,
    Sizing,
    credential_branch,
    may_size_test_set,
    policy_problem,
    signed_branch,
    signed_disagreements,
    signed_facts,
    upload_sizing,
)
from .vocab import (
    ARBITER_REASONS,
    BUDGET_REASONS,
    EXIT_CODES,
    NEW_TEST_REASONS,
    CauseRole,
    Classification,
    EntryState,
    FixtureLock,
    Flag,
    FlakeStatus,
    GateStatus,
    PatchClass,
    PropertyCheck,
    Reason,
    Tier,
    Verdict,
)
from .windows import DayWindow, retention_window
from .worsening import RateChange, rate_change
from .written import pytest_written, written_text

__all__ = [name for name in dir() if not name.startswith("_")]
