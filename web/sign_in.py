"""The sign-in forms: Django's, with the user name bounded by the User model's own length.

Django's AuthenticationForm sets the field's ``max_length`` after the field is built, so
no length validator runs and any name reaches ``authenticate``; django-axes then records a
failed attempt under that name in a ``varchar(255)``, which PostgreSQL refuses with an
error (a 500). Here a name the User model cannot hold is a form error, and neither
``authenticate`` nor axes sees it.
"""

from __future__ import annotations

from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.core.validators import MaxLengthValidator


class BoundedUsername:
    """Mixed into an AuthenticationForm: the user name's ``max_length`` is enforced."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        field = self.fields["username"]
        # Checked after normalisation (NFKC can lengthen a name), like every validator.
        field.validators = [*field.validators, MaxLengthValidator(field.max_length)]


class SignInForm(BoundedUsername, AuthenticationForm):
    pass


class AdminSignInForm(BoundedUsername, AdminAuthenticationForm):
    pass
