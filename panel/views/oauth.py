"""The consent page of the OAuth sign-in (accounts/oauth.py): a signed-in person sees which client asks, for which
scopes, picks a default project (or none), and approves or denies. It is django-oauth-toolkit's authorization view
(request validation, PKCE, the code, the redirect back) with Atrium's page, the audience rule, and the grant."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from django import forms
from django.conf import settings
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.utils.csp import CSP
from oauth2_provider.exceptions import OAuthToolkitError
from oauth2_provider.forms import AllowForm
from oauth2_provider.models import Application
from oauth2_provider.views import AuthorizationView
from oauthlib.oauth2.rfc6749.errors import CustomOAuth2Error

from accounts.models import ApiToken
from accounts.oauth import READ_SCOPE, WRITE_SCOPE, oauth_grant_approve, oauth_resource, oauth_resource_allowed
from palace.errors import AtriumError
from palace.models import Palace
from palace.selectors import palaces_readable
from panel.frame import actor_of, user_of


class ConsentForm(AllowForm):
    project = forms.CharField(required=False)  # a project's origin key, or "" for none (checked when granted)
    read_only = forms.BooleanField(required=False)


def _base(request: HttpRequest) -> str:
    return f"{request.scheme}://{request.get_host()}"


class ConsentView(AuthorizationView):
    template_name = "panel/oauth_consent.html"
    form_class = ConsentForm
    approved: ApiToken | None = None  # the grant form_valid made, for create_authorization_response

    def _refuse_other_resources(self, resources: list[str], credentials: dict[str, Any]) -> None:
        request = self.request
        for resource in resources:
            if not oauth_resource_allowed(resource, request_base=_base(request)):
                error = CustomOAuth2Error(
                    error="invalid_target",
                    description=f"this server issues tokens only for {oauth_resource(_base(request))}",
                    state=credentials.get("state"),
                )
                raise OAuthToolkitError(error=error, redirect_uri=credentials["redirect_uri"])

    def validate_authorization_request(self, request: HttpRequest) -> Any:
        """The toolkit's checks (client, redirect URI, PKCE), then the audience: a resource other than this
        server's /mcp is refused before the person is asked (invalid_target, back to the client), and so is a
        PKCE method other than S256."""
        scopes, credentials = super().validate_authorization_request(request)
        if credentials.get("code_challenge_method") != "S256":  # the toolkit would refuse "plain" only after consent
            error = CustomOAuth2Error(
                error="invalid_request",
                description='PKCE is required with code_challenge_method "S256"',
                state=credentials.get("state"),
            )
            raise OAuthToolkitError(error=error, redirect_uri=credentials["redirect_uri"])
        self._refuse_other_resources(request.GET.getlist("resource"), credentials)
        return scopes, credentials

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        if "application" not in context and self.request.method == "POST":  # the form came back with an error
            context["application"] = Application.objects.filter(client_id=self.request.POST.get("client_id")).first()
        user = user_of(self.request)
        context["projects"] = palaces_readable(user=user, kind=Palace.Kind.PROJECT)
        context["asks_write"] = WRITE_SCOPE in (kwargs.get("scopes") or self.oauth2_data.get("scopes") or [])
        return context

    def render_to_response(self, context: dict[str, Any], **kwargs: Any) -> HttpResponse:
        response: HttpResponse = super().render_to_response(context, **kwargs)
        # The approve/deny form's answer is a redirect to the client's (validated) redirect URI: the page's
        # form-action must allow that origin, or the browser stops the redirect.
        parts = urlsplit(self.oauth2_data.get("redirect_uri") or "")
        if parts.scheme and parts.netloc:
            response._csp_config = {  # type: ignore[attr-defined]
                **settings.SECURE_CSP,
                "form-action": [CSP.SELF, f"{parts.scheme}://{parts.netloc}"],
            }
        return response

    def create_authorization_response(
        self, request: HttpRequest, scopes: str, credentials: dict[str, Any], allow: bool
    ) -> Any:
        # The grant just approved rides along to the validator, which binds the code it issues to that grant.
        if self.approved is not None:
            credentials = {**credentials, "atrium_grant_id": self.approved.pk}
        return super().create_authorization_response(request, scopes, credentials, allow)

    def form_valid(self, form: Any) -> HttpResponse:
        """Approve: a new grant (beside any earlier one of this client: another device keeps its own) and the code
        bound to it, in one transaction; deny: the toolkit's access_denied redirect, nothing stored."""
        data = form.cleaned_data
        if not Application.objects.filter(client_id=data["client_id"]).exists():  # a hidden field tampered with
            error = {"error": "invalid_client", "description": "this client is not registered here"}
            return self.render_to_response({"error": error}, status=400)
        if not data.get("allow"):
            return super().form_valid(form)
        # The audience again (the hidden field came back from the browser); none named: this server's /mcp.
        try:
            self._refuse_other_resources((data.get("resource") or "").split(), data)
        except OAuthToolkitError as error:
            return self.error_response(error, None)
        data["resource"] = data.get("resource") or oauth_resource(_base(self.request))
        if data.get("read_only"):
            data["scope"] = READ_SCOPE
        with transaction.atomic():
            application = Application.objects.get(client_id=data["client_id"])
            try:
                self.approved = oauth_grant_approve(
                    user=user_of(self.request),
                    application=application,
                    scopes=(data.get("scope") or "").split(),
                    project=data.get("project") or None,
                    actor=actor_of(self.request),
                )
            except AtriumError as exc:
                form.add_error("project", exc.message)
                return self.form_invalid(form)
            self.success_url = ""
            response = super().form_valid(form)
            if not self.success_url:  # the toolkit refused (its error redirect): no grant either
                transaction.set_rollback(True)
        return response
