from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.urls import path

from panel import views

urlpatterns = [
    path("login/", auth_views.LoginView.as_view(template_name="panel/login.html"), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("", views.home, name="home"),
    path("tokens/", views.tokens, name="tokens"),
    path("tokens/create/", views.token_create, name="token-create"),
    path("tokens/<int:token_id>/revoke/", views.token_revoke, name="token-revoke"),
]
