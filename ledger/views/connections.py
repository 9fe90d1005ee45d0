"""The views of a settings section for a connection to a service outside the board (notify's
webhook, trackers' issue tracker; see web.pages.SettingsSection), alike in each app: the
section, and a lead's three actions on it: save, remove, test. The app gives its form,
its services and the words of what happened."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from django.core.exceptions import ValidationError
from django.db import models
from django.http import HttpResponse
from django.views.decorators.cache import never_cache

from web.pages import SettingsSection

from ..access import actor_label, for_leads


def section_page(section: SettingsSection):
    """The GET view of the section: the partial for htmx, else a page of its own."""

    @for_leads("GET")
    def view(request, suite):
        return section.render(request, suite)

    return view


def connection_save(section: SettingsSection, form_class, *, field: str | None = None):
    """A POST view that saves the connection from ``form_class``: the view's own
    ``save(request, suite, data)`` takes the valid form's data and answers the notice, or
    a response of its own. A refusal (ValidationError) is shown on the form, at ``field``
    (None: the whole form). Never cached: an answer may show a secret once."""

    def decorate(save: Callable[..., str | HttpResponse]):
        @for_leads("POST")
        @never_cache
        @wraps(save)
        def view(request, suite):
            form = form_class(request.POST)
            if form.is_valid():
                try:
                    answer = save(request, suite, form.cleaned_data)
                except ValidationError as exc:
                    form.add_error(field, exc)
                else:
                    if isinstance(answer, str):
                        return section.done(request, suite, answer)
                    return answer
            return section.render(request, suite, form=form)

        return view

    return decorate


def connection_removal(section: SettingsSection, remove: Callable[..., bool], *, what: str):
    """The POST view that removes the suite's ``what`` ("webhook") with
    ``remove(suite=, actor=)``, which answers whether there was one."""

    @for_leads("POST")
    def view(request, suite):
        if remove(suite=suite, actor=actor_label(request.user)):
            return section.done(request, suite, f"{what.capitalize()} removed.")
        return section.done(request, suite, f"No {what} to remove.")

    return view


def connection_test(section: SettingsSection, model: type[models.Model], *, what: str):
    """A POST view that tests the suite's ``what``, its row of ``model``: the view's own
    ``test(request, row)`` answers whether it worked and the notice saying so. Without a
    row, the notice asks for one first."""

    def decorate(test: Callable[..., tuple[bool, str]]):
        @for_leads("POST")
        @wraps(test)
        def view(request, suite):
            row = model.objects.filter(suite=suite).select_related("suite").first()
            if row is None:
                return section.done(request, suite, f"Set a {what} first.", ok=False)
            ok, notice = test(request, row)
            return section.done(request, suite, notice, ok=ok)

        return view

    return decorate
