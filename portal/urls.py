"""The portal's pages: joining and signing in at the top, the tenant's pages under /portal/, the staff consoles
under /console/."""

from django.contrib.auth import views as auth
from django.urls import path, reverse_lazy

from portal import access, money, payment, reservations, signin, signup, views, volumes
from portal.consoles import urls as consoles

app_name = "portal"

urlpatterns = [
    path("signup", signup.signup, name="signup"),
    path("confirm/<str:token>", signup.confirm, name="confirm"),
    path("login", signin.SignIn.as_view(), name="login"),
    path("login/code", signin.code, name="login_code"),
    path("logout", auth.LogoutView.as_view(next_page=reverse_lazy("portal:login")), name="logout"),
    path(
        "password-reset",
        auth.PasswordResetView.as_view(
            template_name="portal/password_reset.html",
            email_template_name="portal/email/password_reset.txt",
            success_url=reverse_lazy("portal:password_reset_done"),
        ),
        name="password_reset",
    ),
    path(
        "password-reset/sent",
        auth.PasswordResetDoneView.as_view(template_name="portal/password_reset_sent.html"),
        name="password_reset_done",
    ),
    path(
        "password-reset/<uidb64>/<token>",
        auth.PasswordResetConfirmView.as_view(
            template_name="portal/password_set.html", success_url=reverse_lazy("portal:login")
        ),
        name="password_reset_confirm",
    ),
    path("portal/", views.home, name="home"),
    path("portal/allocations", views.allocations_fragment, name="allocations_fragment"),
    path("portal/launch", views.launch, name="launch"),
    path("portal/allocations/<int:allocation_id>", views.allocation, name="allocation"),
    path("portal/allocations/<int:allocation_id>/live", views.allocation_fragment, name="allocation_fragment"),
    path("portal/allocations/<int:allocation_id>/stop", views.allocation_stop_view, name="allocation_stop"),
    path("portal/usage", views.usage, name="usage"),
    path("portal/reservations/new", reservations.reserve, name="reserve"),
    path("portal/team", views.team, name="team"),
    path("portal/team/keys/<int:key_id>/revoke", views.api_key_revoke_view, name="api_key_revoke"),
    path("portal/data", views.data, name="data"),
    path("portal/leave", views.leave, name="leave"),
    path("portal/payment", payment.payment, name="payment"),
    # members' roles, access (SSH keys, secrets), billing, erasure requests
    path("portal/team/members/<int:membership_id>/role", views.member_role_view, name="member_role"),
    path("portal/team/members/<int:membership_id>/remove", views.member_remove_view, name="member_remove"),
    path("portal/access", access.access, name="access"),
    path("portal/access/ssh-keys/<int:key_id>/remove", access.ssh_key_remove_view, name="ssh_key_remove"),
    path("portal/access/secrets/<str:name>/value", access.secret_value_view, name="secret_value"),
    path("portal/access/secrets/<str:name>/delete", access.secret_delete_view, name="secret_delete"),
    path("portal/billing", money.billing, name="billing"),
    path("portal/data/erasure", views.erasure_request_view, name="erasure_request"),
    # volumes: persistent storage, its snapshots, where it is attached and what it costs
    path("portal/volumes", volumes.volumes, name="volumes"),
    path("portal/volumes/table", volumes.volumes_fragment, name="volumes_fragment"),
    path("portal/volumes/<int:volume_id>", volumes.volume, name="volume"),
    path("portal/volumes/<int:volume_id>/delete", volumes.volume_delete_view, name="volume_delete"),
    path(
        "portal/volumes/<int:volume_id>/snapshots/<int:snapshot_id>/restore",
        volumes.snapshot_restore_view,
        name="snapshot_restore",
    ),
    path(
        "portal/volumes/<int:volume_id>/snapshots/<int:snapshot_id>/delete",
        volumes.snapshot_delete_view,
        name="snapshot_delete",
    ),
    path("portal/security", signin.security, name="security"),
    # staff consoles (compliance, operators) under /console/
    *consoles.urlpatterns,
]
