"""Admin for people and their tokens. Every change here is on the op log with the staff member's reason (the audited
site, palace/admin_site.py); this module adds what is particular to users: a user created here gets their personal
palace, as with `atrium createuser`, and the password form asks for the reason too."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.contrib.auth.forms import AdminPasswordChangeForm
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from oauth2_provider.admin import ApplicationAdmin
from oauth2_provider.models import AccessToken, Application, DeviceGrant, Grant, IDToken, RefreshToken

from accounts.models import ApiToken, UserSettings
from accounts.tokens import token_revoke
from palace.admin_site import ReasonField, admin_actor, admin_reason
from palace.services import palace_personal_ensure

User = get_user_model()


class ReasonPasswordChangeForm(AdminPasswordChangeForm):
    reason = ReasonField()


class AtriumUserAdmin(UserAdmin):
    change_password_form = ReasonPasswordChangeForm
    change_user_password_template = "admin/atrium/change_password.html"

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        if not change:  # the same personal palace (owner membership, op row) as `atrium createuser`
            palace_personal_ensure(user=obj, actor=admin_actor(request))

    def user_change_password(self, request: HttpRequest, id: str, form_url: str = "") -> HttpResponse:
        # Django saves the password, then logs it: one transaction, so the op row commits with the change.
        with transaction.atomic():
            return super().user_change_password(request, id, form_url)


admin.site.unregister(User)
admin.site.register(User, AtriumUserAdmin)


@admin.action(description="Revoke selected tokens", permissions=["change"])
def revoke_tokens(modeladmin: admin.ModelAdmin, request: HttpRequest, queryset: QuerySet[ApiToken]) -> None:
    for token in queryset:
        token_revoke(token_id=token.pk, user=None, actor=admin_actor(request), reason=admin_reason(request))
    modeladmin.message_user(request, f"revoked {queryset.count()} tokens", messages.SUCCESS)


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Tokens are listed by label and prefix; the raw value is never stored, so it cannot be shown. Revoking goes
    through the token service (its own op row besides the admin's)."""

    list_display = [
        "label",
        "user",
        "prefix",
        "scope",
        "oauth_application",
        "created_at",
        "last_used_at",
        "expires_at",
        "revoked_at",
    ]
    # "Is an OAuth grant": the rows a person approved a client with, beside personal tokens.
    list_filter = ["scope", ("oauth_application", admin.EmptyFieldListFilter)]
    search_fields = ["label", "user__username", "prefix", "oauth_application__name", "oauth_application__client_id"]
    readonly_fields = [
        "user",
        "label",
        "prefix",
        "scope",
        "oauth_application",
        "created_at",
        "last_used_at",
        "expires_at",
        "revoked_at",
    ]
    # The grant's bindings to its client's code and token family are the toolkit's bookkeeping, not editable.
    exclude = ["key_hash", "oauth_code", "oauth_token_family"]
    actions = [revoke_tokens]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(UserSettings)
class UserSettingsAdmin(admin.ModelAdmin):
    """A person's own settings (the default search fallback and capture mode); they change them on the panel's
    Settings page or over REST. A change here is audited like any admin edit (reason and op row)."""

    list_display = ["user", "search_fallback", "capture_mode", "updated_at"]
    list_filter = ["search_fallback", "capture_mode"]
    search_fields = ["user__username"]
    readonly_fields = ["updated_at"]


# django-oauth-toolkit registers its models in the admin. Codes, access and refresh tokens are the client's
# credentials: a person's grant is the ApiToken row above (revoking it ends them), so they are not edited here.
# Applications stay: an operator pre-registers a client there (audited like every admin change).
for _model in (AccessToken, RefreshToken, Grant, IDToken, DeviceGrant):
    if admin.site.is_registered(_model):
        admin.site.unregister(_model)


class OAuthClientAdmin(ApplicationAdmin):
    """A pre-registered client. "Skip authorization" stays off: the consent page is where a person's grant is
    made (accounts/oauth.py), and a code issued without it would give tokens that /mcp refuses."""

    readonly_fields = (*ApplicationAdmin.readonly_fields, "skip_authorization")


admin.site.unregister(Application)
admin.site.register(Application, OAuthClientAdmin)
