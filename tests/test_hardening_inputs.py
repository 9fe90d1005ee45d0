"""Hardening (issue 14): nothing a user or CI can send is a 500. Odd numbers in every form
and query (Unicode digits, NaN, infinities, huge numbers); over-long user names at sign-in,
on SQLite and PostgreSQL alike; sign-in throttling keyed on the client behind our own
proxies, never on the proxy; and the policy service refusing numbers no form would send.

Every test here runs on whichever database DATABASE_URL selects; the user-name ones are
the PostgreSQL regressions (a ``varchar(255)`` that SQLite never enforces)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django import forms
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.test import Client
from django.urls import reverse

from flakeboard import rules
from junit import forms as junit_forms
from ledger.forms import entries as entry_forms
from ledger.forms import settings as settings_forms
from ledger.forms.settings import PolicyForm, TierRuleForm
from ledger.models import Suite, TierRule
from ledger.settings_services import POLICY_FIELDS, policy_update
from runs.views import trends as trends_views
from tests.conftest import PASSWORD
from web.client_ip import client_address

SUPERSCRIPT_TWO = "\N{SUPERSCRIPT TWO}"
CIRCLED_ONE = "\N{CIRCLED DIGIT ONE}"
ARABIC_THREE = "\N{ARABIC-INDIC DIGIT THREE}"
FULLWIDTH_ONE = "\N{FULLWIDTH DIGIT ONE}"
# Numbers as a form or a query may carry them: digits that are not ASCII (a superscript
# and a circled digit pass str.isdigit but not int(), which reads Arabic-Indic and
# full-width digits), NaN and the infinities in their spellings, numbers past every
# column, one past int()'s digit limit, and junk.
# The fast lane sends one of each kind (QUICK); the slow lane sends the rest too.
QUICK = [SUPERSCRIPT_TWO, ARABIC_THREE, "NaN", "-inf", "1e309", "9" * 5000, "\x00"]
REST = [
    CIRCLED_ONE, FULLWIDTH_ONE, ARABIC_THREE * 2, "nan", "-nan", "inf", "Infinity", "-1e309",
    "9" * 25, "-" + "9" * 25, "1_000", "0x10", " 7 ", "7\n", "",
]


def _lead(client_for, world):
    return client_for(world.users["lead"])


# --- odd numbers in forms and queries -------------------------------------------------


@pytest.mark.parametrize(("sent", "ids"), [
    ("3,14", {3, 14}),
    (" 3 , 14 ", {3, 14}),
    ("3,,x,-4,+5,2.0", {3}),
    (SUPERSCRIPT_TWO, set()),
    (ARABIC_THREE, set()),
    (f"{CIRCLED_ONE},1", {1}),
    (FULLWIDTH_ONE, set()),
    ("9" * 5000, set()),
    ("9" * 19, {int("9" * 19)}),
    ("7\n", {7}),  # the parts are stripped, as before
    ("", set()),
])
def test_confirmed_ids_are_ascii_digits_only(sent, ids):
    form = TierRuleForm({"glob": "tests/*", "tier": "0", "confirm": sent})
    assert form.is_valid(), form.errors
    assert form.confirmed_ids() == ids


def _add_rule(client, world, confirm):
    return client.post(
        reverse("settings_tier_rule_add", args=[world.suite.slug]),
        {"glob": "tests/test_flaky.py::*", "tier": "0", "confirm": confirm},
    )


@pytest.mark.parametrize("confirm", [SUPERSCRIPT_TWO, CIRCLED_ONE, ARABIC_THREE, "9" * 5000])
def test_a_tier_rule_confirmed_with_odd_digits_is_asked_again(client_for, world, confirm):
    client = _lead(client_for, world)
    answer = _add_rule(client, world, confirm)
    assert answer.status_code == 200
    assert answer.context["rule_warning"] is True
    assert [e.pk for e in answer.context["preview"]["would_violate"]] == [world.entry.pk]
    assert not TierRule.objects.filter(glob="tests/test_flaky.py::*").exists()
    # Confirmed with the id the page wrote, the rule is added.
    assert _add_rule(client, world, str(world.entry.pk)).status_code == 302
    assert TierRule.objects.filter(glob="tests/test_flaky.py::*").exists()


def _numeric_inputs(world) -> dict[str, tuple[str, str, dict, str]]:
    """Every form field and query parameter that carries a number, by name: (method, URL,
    the rest of a valid request, the field that gets the odd number)."""
    slug = world.suite.slug
    policy = PolicyForm.for_suite(world.suite).initial  # the budget and cap in percent
    entry = {"node": "tests/test_new.py::test_it", "owner": "@lea", "evidence": "ci/run-2",
             "expires": str(world.today + timedelta(days=7))}
    inputs = {}
    for name in POLICY_FIELDS:
        inputs[f"policy {name}"] = ("post", reverse("settings_policy", args=[slug]), policy, name)
        inputs[f"runs needed {name}"] = (
            "get", reverse("settings_runs_needed", args=[slug]), {}, name)
    inputs["fixture seed"] = ("post", reverse("settings_fixture_pin", args=[slug]),
                              {"fixture_manifest": "sha256:" + "abc0" * 16}, "fixture_seed")
    inputs["tier rule confirm"] = ("post", reverse("settings_tier_rule_add", args=[slug]),
                                   {"glob": "tests/test_flaky.py::*", "tier": "0"}, "confirm")
    inputs["tier rule tier"] = ("post", reverse("settings_tier_rule_add", args=[slug]),
                                {"glob": "tests/test_flaky.py::*"}, "tier")
    for name in ("n", "fails", "upper95", "seed_base"):
        inputs[f"new entry {name}"] = ("post", reverse("entry_new", args=[slug]), entry, name)
        inputs[f"prefilled entry {name}"] = ("get", reverse("entry_new", args=[slug]),
                                             {"node": world.node}, name)
    for page in ("ledger", "reports", "verdicts"):
        inputs[f"{page} page"] = ("get", reverse(page, args=[slug]), {}, "page")
    for name in ("range", "from", "to"):
        inputs[f"trends {name}"] = ("get", reverse("trends", args=[slug]), {}, name)
    inputs["junit share"] = ("post", reverse("settings_junit", args=[slug]), {},
                             "junit_infrastructure_share")
    for name in ("new_test_runs", "new_test_share"):
        inputs[f"new tests {name}"] = ("post", reverse("settings_new_tests", args=[slug]),
                                       {"new_test_runs": "30", "new_test_share": "30"}, name)
    inputs["measure budget"] = ("post", reverse("settings_measure_budget", args=[slug]), {},
                                "measure_budget")
    for name in ("days", "page"):
        inputs[f"flaky {name}"] = ("get", reverse("flaky", args=[slug]), {}, name)
    return inputs


INPUT_NAMES = [
    *(f"policy {name}" for name in POLICY_FIELDS),
    *(f"runs needed {name}" for name in POLICY_FIELDS),
    "fixture seed", "tier rule confirm", "tier rule tier",
    *(f"new entry {name}" for name in ("n", "fails", "upper95", "seed_base")),
    *(f"prefilled entry {name}" for name in ("n", "fails", "upper95", "seed_base")),
    "ledger page", "reports page", "verdicts page", "trends range", "trends from", "trends to",
    "junit share", "new tests new_test_runs", "new tests new_test_share", "measure budget",
    "flaky days",
    "flaky page",
]


def first_of_each_form(names: list[str]) -> list:
    """Each input as a parameter: the first of each form or page in every lane, the form's
    others ``wide`` (make test and CI)."""
    seen, params = set(), []
    for name in names:
        form = name.rsplit(" ", 1)[0]
        params.append(pytest.param(name, marks=pytest.mark.wide if form in seen else ()))
        seen.add(form)
    return params


@pytest.mark.parametrize("odd", [
    pytest.param(QUICK, id="quick"), pytest.param(REST, id="rest", marks=pytest.mark.slow),
])
@pytest.mark.parametrize("input_name", first_of_each_form(INPUT_NAMES))
def test_odd_numbers_are_a_form_error_or_ignored_never_a_500(
        client_for, world, input_name, odd):
    client = _lead(client_for, world)
    client.raise_request_exception = False  # a 500 is an answer to count, not a crash
    method, url, rest, field = _numeric_inputs(world)[input_name]
    answers = {sent: getattr(client, method)(url, {**rest, field: sent}).status_code
               for sent in odd}
    assert {sent: code for sent, code in answers.items() if code >= 500} == {}
    assert set(answers.values()) <= {200, 302, 400}
    suite = Suite.objects.get(pk=world.suite.pk)
    assert all(getattr(suite, name) is not None for name in POLICY_FIELDS)
    assert 0 < suite.max_upper_rate <= 1 and 0 <= suite.max_quarantined_share <= 1
    assert 0 <= suite.junit_infrastructure_share <= 1
    assert suite.new_test_runs >= rules.NEW_TEST_MIN_RUNS and 0 < suite.new_test_share <= 1
    assert suite.measure_budget in rules.POLICY_BOUNDS["measure_budget"]


def test_the_table_holds_every_numeric_field_of_the_forms(world):
    """A number field added to a form later must join the table above."""
    table = _numeric_inputs(world)
    assert sorted(table) == sorted(INPUT_NAMES)
    numeric = (forms.IntegerField, forms.FloatField, forms.DecimalField, forms.TypedChoiceField)
    fields = {
        name
        for module in (settings_forms, entry_forms, trends_views, junit_forms)
        for form in vars(module).values()
        if isinstance(form, type) and issubclass(form, forms.BaseForm)
        for name, field in form.base_fields.items()
        if isinstance(field, numeric)
    }
    assert fields, "no number field found: the search is broken"
    assert fields <= {field for _, _, _, field in table.values()}


# --- over-long user names at sign-in --------------------------------------------------

USERNAME_MAX = get_user_model()._meta.get_field("username").max_length
EMOJI = "\N{GRINNING FACE}"  # four bytes in UTF-8, one character
# NFKC (which Django applies to a name) writes U+FDFA as 18 characters.
LIGATURE = "\N{ARABIC LIGATURE SALLALLAHOU ALAYHE WASALLAM}"

TOO_LONG = {
    "151 letters": "a" * (USERNAME_MAX + 1),
    "255 letters": "a" * 255,
    "256 letters": "a" * 256,
    "10,000 letters": "a" * 10_000,
    "151 emoji": EMOJI * (USERNAME_MAX + 1),
    "256 emoji": EMOJI * 256,
    "150 after NFKC is 2,700": LIGATURE * USERNAME_MAX,
}
LONGEST = {"150 letters": "a" * USERNAME_MAX, "150 emoji": EMOJI * USERNAME_MAX}
SIGN_IN_PAGES = ["login", "admin:login"]


def _sign_in(client, page, username, password="wrong"):  # noqa: S107
    return client.post(reverse(page), {"username": username, "password": password})


@pytest.fixture
def authenticate_calls(monkeypatch):
    """Every user name the sign-in form passed to ``authenticate``."""
    from django.contrib.auth import forms as auth_forms

    calls = []
    real = auth_forms.authenticate

    def spy(request=None, **credentials):
        calls.append(credentials.get("username"))
        return real(request, **credentials)

    monkeypatch.setattr(auth_forms, "authenticate", spy)
    return calls


# Each name, and whether the form refuses it.
NAMES = {**{k: (v, True) for k, v in TOO_LONG.items()},
         **{k: (v, False) for k, v in LONGEST.items()}}


@pytest.mark.parametrize("sign_in_page", SIGN_IN_PAGES)
@pytest.mark.parametrize(("username", "refused"), NAMES.values(), ids=NAMES.keys())
def test_a_user_name_is_bounded_before_anything_authenticates_it(
        db, sign_in_page, username, refused, authenticate_calls):
    """Over the limit: a form error, and neither authenticate nor axes sees the name. At
    the limit: the name is checked, and its failure recorded."""
    answer = _sign_in(Client(), sign_in_page, username)
    assert answer.status_code == 200
    assert bool(answer.context["form"].errors.get("username")) == refused
    seen = [] if refused else [username]
    assert authenticate_calls == seen
    assert list(AccessAttempt.objects.values_list("username", flat=True)) == seen


@pytest.mark.parametrize("username", LONGEST.values(), ids=LONGEST.keys())
def test_a_user_with_the_longest_name_signs_in(db, username):
    get_user_model().objects.create_user(username=username, password=PASSWORD)
    answer = _sign_in(Client(), "login", username, PASSWORD)
    assert answer.status_code == 302
    assert answer.url == reverse("home")


# --- the client's address behind our own proxies --------------------------------------

# (REMOTE_ADDR, X-Forwarded-For, trusted proxies, the client's address)
PROXY = "10.0.0.2"
CLIENT_ADDRESSES = [
    # No trusted proxy: the header is anyone's to write, and ignored.
    (PROXY, "198.51.100.7", 0, PROXY),
    (PROXY, None, 0, PROXY),
    # One proxy: the entry it appended, the last one.
    (PROXY, "198.51.100.7", 1, "198.51.100.7"),
    (PROXY, "6.6.6.6, 198.51.100.7", 1, "198.51.100.7"),  # spoofed on the left
    (PROXY, "6.6.6.6,6.6.6.7,198.51.100.7", 1, "198.51.100.7"),
    (PROXY, "  198.51.100.7  ", 1, "198.51.100.7"),
    (PROXY, "2001:db8::7", 1, "2001:db8::7"),
    (PROXY, "6.6.6.6, 2001:DB8:0:0::7", 1, "2001:db8::7"),  # in canonical form
    (PROXY, "::ffff:198.51.100.7", 1, "198.51.100.7"),
    # Two proxies: the entry the outer one appended, second from the right.
    (PROXY, "6.6.6.6, 198.51.100.7, 10.0.0.9", 2, "198.51.100.7"),
    (PROXY, "198.51.100.7, 10.0.0.9", 2, "198.51.100.7"),
    # Too short for the proxies, or no address where the client should be: REMOTE_ADDR.
    (PROXY, "198.51.100.7", 2, PROXY),
    (PROXY, "", 1, PROXY),
    (PROXY, None, 1, PROXY),
    (PROXY, "198.51.100.7, ", 1, PROXY),
    (PROXY, "6.6.6.6, unknown", 1, PROXY),
    (PROXY, "198.51.100.7:4711", 1, PROXY),
    (PROXY, "[2001:db8::7]", 1, PROXY),
    (PROXY, "fe80::1%eth0", 1, PROXY),
    (PROXY, "198.51.100.7, 999.1.1.1", 1, PROXY),
    (PROXY, "\x00", 1, PROXY),
    (PROXY, "1.2.3.4" * 1000, 1, PROXY),
    ("2001:db8::2", "garbage", 1, "2001:db8::2"),
    (None, "garbage", 1, None),
    ("", None, 0, None),
]


@pytest.mark.parametrize(("remote", "forwarded", "proxies", "client"), CLIENT_ADDRESSES)
def test_the_client_address(remote, forwarded, proxies, client):
    assert client_address(remote, forwarded, proxies) == client


def _behind_proxy(forwarded_for: str) -> Client:
    return Client(REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR=forwarded_for)


def _lock_out(username: str, client: Client) -> None:
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert _sign_in(client, "login", username).status_code == 200
    assert _sign_in(client, "login", username).status_code == 429


def test_behind_a_trusted_proxy_a_lockout_is_the_clients_alone(settings, viewer):
    settings.FLAKEBOARD_TRUSTED_PROXIES = 1
    _lock_out(viewer.username, _behind_proxy("198.51.100.7"))
    # Client B, through the same proxy, signs in as the same user ...
    other = _behind_proxy("192.0.2.55")
    assert _sign_in(other, "login", viewer.username, PASSWORD).status_code == 302
    # ... while client A stays locked out, whatever it writes on the left of the header.
    again = _behind_proxy("192.0.2.55, 198.51.100.7")
    assert _sign_in(again, "login", viewer.username, PASSWORD).status_code == 429
    assert AccessAttempt.objects.get().ip_address == "198.51.100.7"


def test_without_trusted_proxies_the_header_is_ignored(settings, viewer):
    settings.FLAKEBOARD_TRUSTED_PROXIES = 0
    _lock_out(viewer.username, _behind_proxy("198.51.100.7"))
    # Every client behind the proxy is the proxy's address: B is locked out with A.
    other = _behind_proxy("192.0.2.55")
    assert _sign_in(other, "login", viewer.username, PASSWORD).status_code == 429
    assert AccessAttempt.objects.get().ip_address == PROXY


def test_no_proxy_is_trusted_by_default():
    assert settings.FLAKEBOARD_TRUSTED_PROXIES == 0
    assert settings.AXES_CLIENT_IP_CALLABLE == "web.client_ip.request_client_address"


# --- the policy service ---------------------------------------------------------------

GOOD_POLICY = {"max_upper_rate": 0.05, "min_runs": 100, "max_quarantined_share": 0.1,
               "max_quarantine_days": 30}
NOT_A_NUMBER = float("nan")
REFUSED_POLICY = [
    ("max_upper_rate", NOT_A_NUMBER),
    ("max_upper_rate", float("inf")),
    ("max_upper_rate", float("-inf")),
    ("max_upper_rate", 0.0),
    ("max_upper_rate", 1.5),
    ("max_upper_rate", "0.05"),
    ("max_upper_rate", True),
    ("max_quarantined_share", NOT_A_NUMBER),
    ("max_quarantined_share", float("inf")),
    ("max_quarantined_share", -0.1),
    ("min_runs", NOT_A_NUMBER),
    ("min_runs", float("inf")),
    ("min_runs", 10.5),
    ("min_runs", 0),
    ("min_runs", 10**30),
    ("max_quarantine_days", NOT_A_NUMBER),
    ("max_quarantine_days", 366),
    ("max_quarantine_days", -(10**30)),
]


@pytest.mark.parametrize(("field", "value"), REFUSED_POLICY)
def test_the_policy_service_refuses_what_it_cannot_store(suite, field, value):
    before = {name: getattr(suite, name) for name in POLICY_FIELDS}
    with pytest.raises(ValidationError) as refused:
        policy_update(suite=suite, actor="@lea", **{**GOOD_POLICY, field: value})
    assert set(refused.value.message_dict) == {field}
    suite.refresh_from_db()
    assert {name: getattr(suite, name) for name in POLICY_FIELDS} == before


def test_the_policy_service_names_every_refused_field(suite):
    with pytest.raises(ValidationError) as refused:
        policy_update(suite=suite, actor="@lea", max_upper_rate=NOT_A_NUMBER, min_runs=200,
                      max_quarantined_share=float("inf"), max_quarantine_days=30)
    assert set(refused.value.message_dict) == {"max_upper_rate", "max_quarantined_share"}
    assert "finite" in refused.value.message_dict["max_upper_rate"][0]


def test_the_policy_service_takes_the_bounds_themselves(suite):
    policy_update(suite=suite, actor="@lea", max_upper_rate=1.0, min_runs=1_000_000,
                  max_quarantined_share=0.0, max_quarantine_days=365)
    suite.refresh_from_db()
    assert (suite.max_upper_rate, suite.min_runs) == (1.0, 1_000_000)
    assert (suite.max_quarantined_share, suite.max_quarantine_days) == (0.0, 365)
