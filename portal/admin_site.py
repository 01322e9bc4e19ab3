"""The admin for staff with a second factor: django-otp's admin site, whose sign-in asks for a code of the staff
user's TOTP device with the password and which opens only for a session that gave one.

The sign-in form takes the code alone: a staff user has one device (``manage.py staff_totp_enrol``), so the form
uses it when none is chosen instead of asking to pick one first. The password check goes through ``authenticate``,
so a failed admin sign-in is counted by django-axes and locks out like the portal's.
"""

from __future__ import annotations

from typing import Any

from django_otp.admin import OTPAdminAuthenticationForm, OTPAdminSite

from tenancy.totp import totp_device


class StaffAdminAuthenticationForm(OTPAdminAuthenticationForm):
    def _chosen_device(self, user: Any) -> Any:
        return super()._chosen_device(user) or totp_device(user)


class StaffAdminSite(OTPAdminSite):
    login_form = StaffAdminAuthenticationForm
