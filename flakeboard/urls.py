from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from ledger import views as ledger_views

urlpatterns = [
    path("", ledger_views.home, name="home"),
    path("healthz", ledger_views.healthz, name="healthz"),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("suites/<slug:suite>/", include("ledger.urls")),
    path("suites/<slug:suite>/", include("runs.urls")),
]
