"""Forms of the settings page. They parse input only: the services check the rules, and
the policy fields take their bounds from the Suite model's own validators."""

from __future__ import annotations

import re
from datetime import datetime

from django import forms
from django.core.validators import MaxValueValidator, MinValueValidator

from flakeboard import rules

from ..models import ApiToken, Role, Suite, TierRule
from ..settings_services import POLICY_FIELDS
from ..tokens import token_expiry

# An entry id as the page writes it: ASCII digits only (str.isdigit also takes "²" and
# "٣", which int() refuses or reads), and no longer than a 64-bit id.
ENTRY_ID = re.compile(r"[0-9]{1,19}")


def _limit(name: str, kind) -> float | int | None:
    for validator in Suite._meta.get_field(name).validators:
        if isinstance(validator, kind):
            return validator.limit_value
    return None


def _policy_field(name: str, field_class, label: str, **extra):
    model_field = Suite._meta.get_field(name)
    return field_class(
        label=label,
        help_text=model_field.help_text,
        min_value=_limit(name, MinValueValidator),
        max_value=_limit(name, MaxValueValidator),
        **extra,
    )


def as_percent(fraction: float) -> str:
    """0.12 → "12" and 0.0001 → "0.01": a stored fraction as the form shows it, without the
    float noise of multiplying by 100 (0.07 * 100 is 7.000000000000001)."""
    return f"{fraction * 100:.10g}"


class PercentField(forms.FloatField):
    """A fraction typed as a percent (12 means 12%), its bounds the model's converted; what
    it cleans is the fraction the service and the model keep."""

    def __init__(self, *, model_field: str, **kwargs):
        limits = (_limit(model_field, kind) for kind in (MinValueValidator, MaxValueValidator))
        low, high = (None if limit is None else limit * 100 for limit in limits)
        super().__init__(
            min_value=low, max_value=high, help_text=Suite._meta.get_field(model_field).help_text
            + " In percent: 12 means 12%.",
            widget=forms.NumberInput(attrs={"step": "any"}), **kwargs,
        )

    def clean(self, value):
        percent = super().clean(value)
        return None if percent is None else percent / 100


class PolicyForm(forms.Form):
    max_upper_rate = PercentField(model_field="max_upper_rate", label="Failure-rate budget (%)")
    min_runs = _policy_field("min_runs", forms.IntegerField, "Fewest runs per measurement")
    max_quarantined_share = PercentField(
        model_field="max_quarantined_share", label="Quarantine cap (% of the test set)"
    )
    max_quarantine_days = _policy_field(
        "max_quarantine_days", forms.IntegerField, "Longest quarantine (days)"
    )
    # Not required: a form sent without it (an older page, a script) keeps the count.
    clear_after_clean_measurements = _policy_field(
        "clear_after_clean_measurements", forms.IntegerField,
        "Clean measurements before an entry is ready to clear", required=False,
    )
    note = forms.CharField(
        required=False, max_length=500, help_text="Why the numbers change (kept in the audit)."
    )
    # Sent back once the lead has seen that the new cap leaves the share over it.
    confirm = forms.BooleanField(required=False, widget=forms.HiddenInput)

    PERCENTS = ("max_upper_rate", "max_quarantined_share")

    @classmethod
    def for_suite(cls, suite: Suite) -> PolicyForm:
        initial = {name: getattr(suite, name) for name in POLICY_FIELDS}
        percents = {name: as_percent(initial[name]) for name in cls.PERCENTS}
        return cls(initial={**initial, **percents})

    def policy(self) -> dict:
        """The cleaned numbers and note, as policy_update takes them."""
        return {name: value for name, value in self.cleaned_data.items() if name != "confirm"}


class FixturePinForm(forms.Form):
    fixture_manifest = forms.CharField(
        label="Manifest digest",
        required=False,
        max_length=200,
        help_text="As flakeboard_ci.py pin prints it: sha256: and hex digits, or the hex "
                  "digits alone (the same digest). Leave empty to remove the pin.",
        widget=forms.TextInput(attrs={"placeholder": "sha256:…", "spellcheck": "false"}),
    )
    fixture_seed = forms.IntegerField(label="Seed", required=False)

    @classmethod
    def for_suite(cls, suite: Suite) -> FixturePinForm:
        pin = suite.fixture_pin
        return cls(initial={"fixture_manifest": pin.manifest if pin else "",
                            "fixture_seed": suite.fixture_seed})


class _SuiteFieldsForm(forms.Form):
    """A form whose fields are the Suite's fields of the same names."""

    @classmethod
    def for_suite(cls, suite: Suite):
        return cls(initial={name: getattr(suite, name) for name in cls.base_fields})


class BadgeForm(_SuiteFieldsForm):
    public_badge = forms.BooleanField(
        label="Public: anyone with the address may see the badge", required=False
    )


class AutoClearForm(_SuiteFieldsForm):
    auto_clear = forms.BooleanField(
        label="Clear each ready entry automatically", required=False
    )


class JUnitShareForm(forms.Form):
    junit_infrastructure_share = PercentField(
        model_field="junit_infrastructure_share", label="Infrastructure share (%)"
    )

    @classmethod
    def for_suite(cls, suite: Suite) -> JUnitShareForm:
        return cls(initial={
            "junit_infrastructure_share": as_percent(suite.junit_infrastructure_share)})


class NewTestsForm(forms.Form):
    new_test_runs = _policy_field("new_test_runs", forms.IntegerField, "Runs of a new test")
    new_test_share = PercentField(model_field="new_test_share",
                                  label="Largest new share (% of the selection)")

    @classmethod
    def for_suite(cls, suite: Suite) -> NewTestsForm:
        return cls(initial={"new_test_runs": suite.new_test_runs,
                            "new_test_share": as_percent(suite.new_test_share)})


class MeasureBudgetForm(forms.Form):
    measure_budget = _policy_field("measure_budget", forms.IntegerField,
                                   "Measure budget (seconds)")

    @classmethod
    def for_suite(cls, suite: Suite) -> MeasureBudgetForm:
        return cls(initial={"measure_budget": suite.measure_budget})


class DefaultBranchForm(forms.Form):
    default_branch = forms.CharField(
        max_length=rules.META_MAX_LENGTH, label="Default branch",
        help_text="Only CI's runs on this branch size the test set (checked as git checks "
                  "a branch's name when saved).",
        widget=forms.TextInput(attrs={"spellcheck": "false", "autocomplete": "off"}),
    )

    @classmethod
    def for_suite(cls, suite: Suite) -> DefaultBranchForm:
        return cls(initial={"default_branch": suite.default_branch})


class TrustPolicyForm(forms.Form):
    """A CI whose OIDC tokens the suite trusts; the service checks it."""

    kind = forms.ChoiceField(
        label="Issuer", choices=[("github", "GitHub Actions"), ("gitlab", "GitLab"),
                                 ("custom", "Custom")],
        help_text="GitHub's issuer is token.actions.githubusercontent.com.")
    issuer = forms.CharField(
        label="Issuer URL", required=False, max_length=200,
        help_text="GitLab: the instance's URL (https://gitlab.com); a custom issuer's iss.",
        widget=forms.TextInput(attrs={"spellcheck": "false", "autocomplete": "off"}))
    repository = forms.CharField(
        max_length=200, help_text="owner/name on GitHub; the project's path on GitLab.",
        widget=forms.TextInput(attrs={"spellcheck": "false", "autocomplete": "off"}))
    workflow = forms.CharField(
        required=False, max_length=200,
        help_text="Optional: .github/workflows/main.yml, or .gitlab-ci.yml.",
        widget=forms.TextInput(attrs={"spellcheck": "false", "autocomplete": "off"}))
    default_ref = forms.CharField(
        label="Default branch ref", required=False, max_length=rules.META_MAX_LENGTH,
        help_text="The ref claim of the default branch's jobs. Empty: refs/heads/<default "
                  "branch> on GitHub, <default branch> on GitLab (protected).",
        widget=forms.TextInput(attrs={"spellcheck": "false", "autocomplete": "off"}))


class TierRuleForm(forms.Form):
    glob = forms.CharField(
        max_length=rules.NODEID_MAX_LENGTH,
        help_text="An fnmatch pattern on the node id, such as tests/test_properties.py::*",
        widget=forms.TextInput(attrs={"spellcheck": "false", "autocomplete": "off"}),
    )
    tier = forms.TypedChoiceField(
        choices=TierRule._meta.get_field("tier").choices, coerce=int, initial=0
    )
    # The ids of the entries the lead was warned about, sent back to confirm.
    confirm = forms.CharField(required=False, widget=forms.HiddenInput)

    def confirmed_ids(self) -> set[int]:
        """The ids sent back; anything else in the list confirms nothing."""
        raw = self.cleaned_data.get("confirm") or ""
        return {
            int(part) for part in (piece.strip() for piece in raw.split(","))
            if ENTRY_ID.fullmatch(part)
        }


class MemberForm(forms.Form):
    username = forms.CharField(max_length=150)
    role = forms.ChoiceField(choices=Role.choices, initial=Role.VIEWER)


class TokenForm(forms.Form):
    name = forms.CharField(
        required=False, max_length=100, help_text="What uses it, such as “ci main”."
    )
    scope = forms.ChoiceField(
        choices=ApiToken.Scope.choices,
        initial=ApiToken.Scope.READ,
        help_text="read: fetch the ledger and trends; write: also upload reports and verdicts.",
    )
    expires_at = forms.DateField(
        label="Expires", required=False, widget=forms.DateInput(attrs={"type": "date"}),
        help_text="Optional: the last day (UTC) the token works. Empty: it never expires.",
    )
    default_branch_only = forms.BooleanField(
        label="Default branch only", required=False,
        help_text="A write token for the default branch's CI jobs alone, kept as a protected "
                  "variable: only such a token's JUnit sizes the test set.",
    )

    def clean_expires_at(self) -> datetime | None:
        """The last day it works, as the instant it stops: the next midnight, UTC."""
        day = self.cleaned_data["expires_at"]
        return None if day is None else token_expiry(day)


class CodeownersForm(forms.Form):
    """The suite's CODEOWNERS, pasted or uploaded (an uploaded file wins). The service
    checks it: its size and each line."""

    codeowners = forms.CharField(
        label="CODEOWNERS", required=False, strip=False,
        help_text="Paste the file: each line a pattern and its owners (@user, @org/team or "
                  "an e-mail). Empty: no CODEOWNERS.",
        widget=forms.Textarea(attrs={"rows": 10, "spellcheck": "false", "class": "code"}),
    )
    upload = forms.FileField(
        label="Or upload the file", required=False,
        help_text="The repository's CODEOWNERS (.github/CODEOWNERS, CODEOWNERS or "
                  "docs/CODEOWNERS).",
    )

    @classmethod
    def for_suite(cls, suite: Suite) -> CodeownersForm:
        return cls(initial={"codeowners": suite.codeowners})

    def clean(self):
        data = super().clean()
        upload = data.get("upload")
        if upload is not None:
            if upload.size > rules.CODEOWNERS_MAX_BYTES:
                raise forms.ValidationError(
                    f"The file is over {rules.CODEOWNERS_MAX_BYTES} bytes, the most GitHub reads.")
            try:
                data["codeowners"] = upload.read().decode("utf-8")
            except UnicodeDecodeError:
                raise forms.ValidationError("The uploaded file is not UTF-8 text.") from None
        return data
