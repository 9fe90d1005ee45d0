from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from flakeboard.api import api
from ledger import views as ledger_views
from runs.api.download import ci_client

urlpatterns = [
    path("", ledger_views.home, name="home"),
    path("healthz", ledger_views.healthz, name="healthz"),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("api/v1/", api.urls),
    path("ci/flakeboard_ci.py", ci_client, name="ci_client"),
    path("suites/<slug:suite>/", include("ledger.urls")),
    path("suites/<slug:suite>/", include("runs.urls")),
]
