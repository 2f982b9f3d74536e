"""Admin for the judge: its settings (the API key write-only, saved through judge_settings_update so the rules —
encryption, the mask, "on without a key stays off", the key bound to its endpoint, the egress rule, the op row — are
the service's, and who may see or change them is the service's check too) and its rulings (read-only, their
texts behind `memory.view_memory_body`)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.http import HttpRequest

from memory.judge import judge_settings_allowed, judge_settings_check, judge_settings_update, key_mask
from memory.models import Adjudication, JudgeSettings
from palace.actors import Actor
from palace.admin import BodyMaskedAdmin
from palace.errors import InvalidInput


class JudgeSettingsForm(forms.ModelForm):
    api_key = forms.CharField(
        required=False,
        strip=True,
        widget=forms.PasswordInput(render_value=False),  # never back-filled
        help_text="Leave empty to keep the stored key.",
    )
    clear_key = forms.BooleanField(required=False, help_text="Remove the stored key (turns the judge off).")

    class Meta:
        model = JudgeSettings
        fields = ("enabled", "base_url", "model", "timeout_ms")

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if not self.errors:
            try:
                judge_settings_check(
                    base_url=data.get("base_url") or "",
                    model=data.get("model") or "",
                    timeout_ms=data.get("timeout_ms") or 0,
                    api_key=data.get("api_key") or "",
                    clear_key=bool(data.get("clear_key")),
                )
            except InvalidInput as exc:  # the service's refusal, shown on the form instead of a 500
                raise forms.ValidationError(exc.message) from None
        return data


@admin.register(JudgeSettings)
class JudgeSettingsAdmin(admin.ModelAdmin):
    form = JudgeSettingsForm
    list_display = ("__str__", "enabled", "base_url", "model", "timeout_ms", "key", "updated_at")
    readonly_fields = ("key", "updated_at", "updated_by")
    revert_refused = (
        "the judge's settings save through judge_settings_update (a key is needed to turn it on): change them back "
        "on this page"
    )

    @admin.display(description="API key")
    def key(self, obj: JudgeSettings) -> str:
        return key_mask(length=obj.api_key_length, last4=obj.api_key_last4) or "—"

    # The same check as REST and the panel (memory.judge.config), not Django's add/change defaults alone.
    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return judge_settings_allowed(request.user, change=False)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return judge_settings_allowed(request.user, change=True)

    def has_module_permission(self, request: HttpRequest) -> bool:
        return judge_settings_allowed(request.user, change=False)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return judge_settings_allowed(request.user, change=True) and not JudgeSettings.objects.exists()

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def save_model(self, request: HttpRequest, obj: JudgeSettings, form: Any, change: bool) -> None:
        data = form.cleaned_data
        judge_settings_update(
            actor=Actor.for_user(request.user),  # type: ignore[arg-type]
            enabled=data["enabled"],
            base_url=data["base_url"],
            model=data["model"],
            timeout_ms=data["timeout_ms"],
            api_key=data.get("api_key") or "",
            clear_key=bool(data.get("clear_key")),
        )
        obj.pk = JudgeSettings.objects.values_list("pk", flat=True).get()
        obj.refresh_from_db()


@admin.register(Adjudication)
class AdjudicationAdmin(BodyMaskedAdmin):
    """A ruling quotes the save it ruled on (`new_text`) and the reason names what it said, so both need
    `memory.view_memory_body`, as a memory's body does (the same rule as the knowledge pages)."""

    list_display = ("id", "palace", "created_at", "verdict", "contradiction", "model_took_part", "fallback_reason")
    list_filter = ("verdict", "model_took_part", "fallback_reason")
    body_fields = ("new_text", "reason")

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Rulings could always be deleted with the model permission (the audited site asks for a reason).
        return admin.ModelAdmin.has_delete_permission(self, request, obj)
