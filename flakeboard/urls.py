from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from board.metrics import metrics
from flakeboard.api import api
from ledger.views import home
from runs.api.download import ci_client
from web.sign_in import AdminSignInForm, SignInForm

# Both sign-in pages bound the user name (see web.sign_in).
admin.site.login_form = AdminSignInForm

urlpatterns = [
    path("", home.home, name="home"),
    path("healthz", home.healthz, name="healthz"),
    path("metrics", metrics, name="metrics"),
    path("accounts/login/", auth_views.LoginView.as_view(authentication_form=SignInForm),
         name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("api/v1/", api.urls),
    path("ci/flakeboard_ci.py", ci_client, name="ci_client"),
    path("suites/<slug:suite>/", include("ledger.urls")),
    path("suites/<slug:suite>/", include("board.urls")),
    path("suites/<slug:suite>/", include("runs.urls")),
    path("suites/<slug:suite>/", include("notify.urls")),
    path("suites/<slug:suite>/", include("trackers.urls")),
]

handler400 = "board.error_pages.bad_request"
handler403 = "board.error_pages.permission_denied"
handler404 = "board.error_pages.page_not_found"
handler500 = "board.error_pages.server_error"
