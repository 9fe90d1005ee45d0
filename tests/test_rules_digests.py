"""SPEC 2.3: a fixture manifest's digest in one canonical form. ``sha256:`` and the bare hex
name the same digest, in any case; anything else is no digest and is refused where it is
entered. The paths that take one: test_fixture_digest.py."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flakeboard.rules import (
    META_MAX_LENGTH,
    FixtureLock,
    FixturePin,
    Problem,
    canonical_digest,
    digest_key,
    digest_problem,
    effective_fixture_lock,
    pin_problem,
    same_digest,
)
from tests.helpers import table

HEX = "9f2c" * 16  # sha256's 64 digits, as `flakeboard_ci.py pin` writes them

CANONICAL = [
    *table(
        f"""
        sha256:{HEX}           sha256:{HEX}  the-clients-spelling
        {HEX}                  sha256:{HEX}  the-seeds-spelling
        {HEX.upper()}          sha256:{HEX}  upper-case-hex
        SHA256:{HEX.upper()}   sha256:{HEX}  upper-case-prefix
        Sha256:{HEX}           sha256:{HEX}  mixed-case-prefix
        sha256:4be1c0de        sha256:4be1c0de  short-in-a-record
        0                      sha256:0      one-digit
        sha256:                -             prefix-without-hex
        sha256                 -             prefix-without-colon
        md5:{HEX[:32]}         -             another-algorithm
        sha256:{HEX}g          -             a-letter-past-f
        sha256::{HEX}          -             two-colons
        sha256:sha256:{HEX}    -             two-prefixes
        not-a-digest           -             a-word
        0x{HEX}                -             a-python-literal
        """,
        str, str,
    ),
    pytest.param("", None, id="blank"),
    pytest.param(f" sha256:{HEX}", None, id="leading-space"),
    pytest.param(f"sha256:{HEX}\n", None, id="trailing-newline"),
    pytest.param(f"sha256: {HEX}", None, id="space-after-the-prefix"),
    pytest.param(f"\u017fha256:{HEX}", None, id="long-s-folds-to-s-but-is-no-prefix"),
    pytest.param("\uff19\uff46", None, id="fullwidth-hex"),
    pytest.param("\u0669", None, id="arabic-indic-digit"),
]


@pytest.mark.parametrize(("value", "canonical"), CANONICAL)
def test_canonical_digest(value: str, canonical: str | None) -> None:
    assert canonical_digest(value) == canonical
    problem = digest_problem(value, META_MAX_LENGTH)
    if canonical is not None:
        assert problem is None
    else:
        assert problem in (Problem.REQUIRED, Problem.BAD_FORMAT)


@pytest.mark.parametrize(("value", "problem"), [
    pytest.param(None, Problem.NOT_A_STRING, id="null"),
    pytest.param(123, Problem.NOT_A_STRING, id="a-number"),
    pytest.param("", Problem.REQUIRED, id="blank"),
    pytest.param("sha256:xyz", Problem.BAD_FORMAT, id="not-hex"),
    pytest.param("a" * 64, None, id="bare-64-fits"),
    # The canonical form is what is stored, so the limit is on it, prefix included.
    pytest.param("sha256:" + "a" * (META_MAX_LENGTH - 7), None, id="at-the-limit"),
    pytest.param("a" * (META_MAX_LENGTH - 6), Problem.TOO_LONG, id="bare-one-over-once-prefixed"),
])
def test_digest_problem(value: object, problem: Problem | None) -> None:
    assert digest_problem(value, META_MAX_LENGTH) is problem


@pytest.mark.parametrize(("value", "problem"), [
    pytest.param(f"sha256:{HEX}", None, id="the-clients-spelling"),
    pytest.param(HEX.upper(), None, id="bare-upper-case"),
    pytest.param("sha256:4be1c0de", Problem.BAD_FORMAT, id="eight-digits"),
    pytest.param(HEX[:-1], Problem.BAD_FORMAT, id="63-digits"),
    pytest.param(f"sha256:{HEX}0", Problem.BAD_FORMAT, id="65-digits"),
    pytest.param("not-a-digest", Problem.BAD_FORMAT, id="a-word"),
    pytest.param("", Problem.REQUIRED, id="blank"),
    pytest.param(None, Problem.NOT_A_STRING, id="null"),
])
def test_a_pin_is_a_digest_of_sha256s_64_digits(value: object, problem: Problem | None) -> None:
    """What `flakeboard_ci.py pin` prints: no pin of another length could ever be matched."""
    assert pin_problem(value, META_MAX_LENGTH) is problem


@pytest.mark.parametrize(("one", "other", "same"), [
    pytest.param(f"sha256:{HEX}", HEX, True, id="prefixed-and-bare"),
    pytest.param(HEX.upper(), f"sha256:{HEX}", True, id="upper-and-lower"),
    pytest.param(f"sha256:{HEX}", f"sha256:{HEX[:-1]}0", False, id="one-digit-differs"),
    pytest.param(f"sha256:{HEX}", f"sha256:{HEX}0", False, id="one-digit-longer"),
    # Kept from before digests were checked: such a value matches itself and nothing else.
    pytest.param("m1", "m1", True, id="stored-non-digest-matches-itself"),
    pytest.param("M1", "m1", False, id="a-non-digest-is-not-case-folded"),
    pytest.param("sha256:", "", False, id="empty-prefix-is-not-blank"),
])
def test_same_digest(one: str, other: str, same: bool) -> None:
    assert same_digest(one, other) is same
    assert same_digest(other, one) is same


def test_the_issues_scenario_a_bare_hex_pin_matches_the_clients_digest() -> None:
    """Issue 29, item 6: a pin set as the bare hex, a gate record sending sha256:<hex>."""
    pin = FixturePin(manifest=HEX, seed=9137)
    assert effective_fixture_lock(FixtureLock.MATCH, f"sha256:{HEX}", 9137, pin) is \
        FixtureLock.MATCH
    assert effective_fixture_lock(FixtureLock.MATCH, f"sha256:{HEX[:-1]}0", 9137, pin) is \
        FixtureLock.DRIFTED


hex_digits = st.text(alphabet="0123456789abcdefABCDEF", min_size=1, max_size=80)
any_case = st.sampled_from([str.lower, str.upper, str.swapcase, lambda text: text])


@given(digits=hex_digits, bare_case=any_case, prefixed_case=any_case)
def test_bare_hex_and_its_sha256_spelling_canonicalise_equal(digits, bare_case, prefixed_case):
    bare = bare_case(digits)
    prefixed = prefixed_case("sha256:" + digits)
    assert canonical_digest(bare) == canonical_digest(prefixed) == "sha256:" + digits.lower()
    assert same_digest(bare, prefixed)


@given(value=st.text(max_size=80) | hex_digits | hex_digits.map("sha256:".__add__))
def test_canonicalisation_is_idempotent_and_its_form_is_lower_case_prefixed_hex(value):
    canonical = canonical_digest(value)
    if canonical is None:
        assert digest_key(value) == value
        return
    assert canonical_digest(canonical) == canonical == digest_key(value)
    prefix, hex_part = canonical[:7], canonical[7:]
    assert prefix == "sha256:" and hex_part and set(hex_part) <= set("0123456789abcdef")


@given(one=hex_digits, other=hex_digits)
def test_two_digests_are_the_same_exactly_when_their_hex_is(one, other):
    assert same_digest(one, "sha256:" + other) is (one.lower() == other.lower())


@given(digits=hex_digits | st.text(alphabet="0123456789abcdefABCDEF", min_size=64, max_size=64))
def test_a_digest_is_a_pin_exactly_when_it_has_64_digits(digits):
    assert digest_problem(digits, META_MAX_LENGTH) is None
    assert (pin_problem(digits, META_MAX_LENGTH) is None) is (len(digits) == 64)
    assert (pin_problem("sha256:" + digits, META_MAX_LENGTH) is None) is (len(digits) == 64)
