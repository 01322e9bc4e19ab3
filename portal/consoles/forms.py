"""The consoles' forms: shapes only; the services judge. Every form that acts carries a one-time token
(``frame.TOKEN_FIELD``) so that sending it twice acts once."""

from __future__ import annotations

from typing import Any

from django import forms

from compliance.domain.retention import Category
from portal.consoles.frame import new_token

CATEGORIES = [(c.value, c.value) for c in Category]
DATETIME = forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M")
DATETIME_FORMATS = ["%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d"]


def when(label: str) -> forms.DateTimeField:
    return forms.DateTimeField(required=False, label=label, widget=DATETIME, input_formats=DATETIME_FORMATS)


class OnceForm(forms.Form):
    """A form that acts: its hidden token is new each time the form is drawn."""

    once = forms.CharField(
        widget=forms.HiddenInput, error_messages={"required": "This form is out of date: send it again."}
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("initial", {}).setdefault("once", new_token())
        super().__init__(*args, **kwargs)


# --- compliance -------------------------------------------------------------------------------------------------


class AuditSearchForm(forms.Form):
    tenant = forms.SlugField(required=False, label="Tenant (slug)")
    actor = forms.CharField(required=False, max_length=150, label="Actor (username)")
    action = forms.CharField(required=False, max_length=100, label="Action (prefix, e.g. legal_hold.)")
    target = forms.CharField(
        required=False, max_length=120, label="Target (type, or type:id)", help_text="allocation or allocation:42"
    )
    since = when("From (UTC)")
    until = when("To (UTC)")


class BundleForm(OnceForm):
    tenant = forms.ChoiceField(label="Tenant")
    since = when("From (UTC)")
    until = when("To (UTC)")

    def __init__(self, *args: Any, tenants: list[tuple[str, str]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["tenant"].choices = [("", "every tenant"), *tenants]  # type: ignore[attr-defined]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("since") and data.get("until") and data["since"] >= data["until"]:
            self.add_error("until", "The end of the range must come after its start.")
        return data


class HoldScopeForm(forms.Form):
    tenant = forms.ChoiceField(label="Tenant")
    categories = forms.MultipleChoiceField(
        choices=CATEGORIES, required=False, widget=forms.CheckboxSelectMultiple, label="Categories (none: every one)"
    )
    created_from = when("Created from (UTC)")
    created_to = when("Created to (UTC)")

    def __init__(self, *args: Any, tenants: list[tuple[str, str]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["tenant"].choices = [("", "—"), *tenants]  # type: ignore[attr-defined]


class HoldPlaceForm(OnceForm, HoldScopeForm):
    """Placing the hold just previewed: its scope rides along unseen (the page states it); changing the scope means
    previewing again."""

    matter = forms.CharField(max_length=200, label="Matter")
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), label="Reason")
    lock_until = when("Preservation lock until (UTC, optional)")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name in ("tenant", "created_from", "created_to"):
            self.fields[name].widget = forms.HiddenInput()
        self.fields["categories"].widget = forms.MultipleHiddenInput()


class ReasonForm(OnceForm):
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), max_length=500, label="Reason")


class CheckpointForm(OnceForm):
    pass


# --- operators --------------------------------------------------------------------------------------------------


class DefragmentStartForm(OnceForm):
    pass


class QuotaForm(OnceForm):
    gpus = forms.DecimalField(
        required=False,
        min_value=0,
        max_digits=9,
        decimal_places=3,
        label="GPU quota",
        help_text="GPUs the tenant may hold at once (a MIG slice counts its compute share); empty lifts the quota.",
    )
    endpoint_calls = forms.IntegerField(
        required=False,
        min_value=1,
        label="Endpoint calls a minute",
        help_text="Calls a minute each of the tenant's endpoints takes; empty: the default.",
    )
    volume_gb = forms.IntegerField(
        required=False,
        min_value=0,
        label="Storage quota (GB)",
        help_text="GB the tenant's volumes may hold (their provisioned size); empty lifts the quota.",
    )


# --- finance ----------------------------------------------------------------------------------------------------

# Months are read by core.domain.months (the API's reading): a refusal lands on the field it names.


class MonthRangeForm(forms.Form):
    since = forms.CharField(required=False, max_length=7, label="From month (YYYY-MM)")
    until = forms.CharField(required=False, max_length=7, label="To month (YYYY-MM)")


class ReconcileForm(OnceForm):
    month = forms.CharField(max_length=7, label="Month (YYYY-MM)")
    tenant = forms.ChoiceField(label="Tenant", required=False)

    def __init__(self, *args: Any, tenants: list[tuple[str, str]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["tenant"].choices = [("", "every tenant"), *tenants]  # type: ignore[attr-defined]


class RetryForm(OnceForm):
    pass


class ExportForm(OnceForm):
    date_from = forms.DateField(label="From day (UTC)", widget=forms.DateInput(attrs={"type": "date"}))
    date_to = forms.DateField(label="To day (UTC, inclusive)", widget=forms.DateInput(attrs={"type": "date"}))
    tenant = forms.ChoiceField(label="Tenant", required=False)
    detail = forms.BooleanField(label="Per allocation (detail)", required=False)
    file_format = forms.ChoiceField(label="Format", choices=[("csv", "CSV"), ("parquet", "Parquet")])

    def __init__(self, *args: Any, tenants: list[tuple[str, str]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["tenant"].choices = [("", "every tenant"), *tenants]  # type: ignore[attr-defined]
