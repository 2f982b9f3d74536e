"""django-oauth-toolkit's settings (OAUTH2_PROVIDER) for the OAuth sign-in of the MCP endpoint (accounts/oauth.py):
authorization code with PKCE S256 only, refresh tokens rotated (a reused one revokes its family), access tokens
bound to this server's /mcp (RFC 8707, stored on codes and tokens by the toolkit), open but bounded RFC 7591
registration, and Client ID Metadata Documents. Scopes memory.read / memory.write are a personal token's read /
write."""

from __future__ import annotations

from typing import Any


def oauth2_provider(*, public_url: str, access_seconds: int, refresh_days: int) -> dict[str, Any]:
    return {
        "SCOPES": {
            "memory.read": "Read and search your memories and your projects' memories",
            "memory.write": "Save, correct and forget memories",
        },
        "DEFAULT_SCOPES": ["memory.read", "memory.write"],
        "READ_SCOPE": "memory.read",
        "WRITE_SCOPE": "memory.write",
        "OAUTH2_VALIDATOR_CLASS": "accounts.oauth.AtriumOAuth2Validator",
        "PKCE_REQUIRED": True,
        "COMPLIANT_BCP_RFC9700_PKCE_METHOD": True,  # S256 only: "plain" is refused
        "COMPLIANT_BCP_RFC9700_IMPLICIT_GRANT": True,
        "COMPLIANT_BCP_RFC9700_PASSWORD_GRANT": True,
        "ROTATE_REFRESH_TOKEN": True,
        "REFRESH_TOKEN_REUSE_PROTECTION": True,
        "AUTHORIZATION_CODE_EXPIRE_SECONDS": 60,
        "ACCESS_TOKEN_EXPIRE_SECONDS": access_seconds,
        "REFRESH_TOKEN_EXPIRE_SECONDS": refresh_days * 86400,
        "REQUEST_APPROVAL_PROMPT": "force",  # the person sees the consent page every time a client asks
        "OAUTH2_RESPONSE_TYPES_SUPPORTED": ["code"],
        "OAUTH2_GRANT_TYPES_SUPPORTED": ["authorization_code", "refresh_token"],
        "OAUTH2_TOKEN_ENDPOINT_AUTH_METHODS_SUPPORTED": ["none", "client_secret_post", "client_secret_basic"],
        # The issuer and the endpoints' host: public_url when set (behind a proxy), else the request's own.
        "OIDC_ISS_ENDPOINT": public_url.rstrip("/"),
        "DCR_ENABLED": True,
        "DCR_REGISTRATION_PERMISSION_CLASSES": ("accounts.oauth.ThrottledRegistration",),
        # Client ID Metadata Documents: the toolkit resolves an https client_id to a client (cached per the
        # document's max-age, failures backed off), fetched by Atrium's egress rule (api/oauth_cimd.py).
        "CIMD_ENABLED": True,
        "CIMD_METADATA_FETCHER": "api.oauth_cimd.EgressMetadataFetcher",
        "CIMD_FETCH_TIMEOUT_SECONDS": 5,
        "CIMD_MAX_DOCUMENT_SIZE": 16 * 1024,
        "OAUTH2_PROTECTED_RESOURCE_NAME": "Atrium memory (MCP)",
        # Loopback redirects (http://127.0.0.1:PORT/callback) are how CLI and desktop clients receive the code.
        "ALLOWED_REDIRECT_URI_SCHEMES": ["http", "https"],
        "ALLOWED_SCHEMES": ["http", "https"],
    }
