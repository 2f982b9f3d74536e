from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.urls import path

from panel.views import account, corridor, entity_facts, episodes, judge, log, palace, today

urlpatterns = [
    path("login/", auth_views.LoginView.as_view(template_name="panel/login.html"), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("", account.root, name="home"),
    path("palaces/", account.palaces, name="palaces"),
    path("scope/", account.scope_switch, name="scope"),
    path("tokens/", account.tokens, name="tokens"),
    path("tokens/create/", account.token_create, name="token-create"),
    path("tokens/<int:token_id>/revoke/", account.token_revoke, name="token-revoke"),
    path("today/", today.today, name="today"),
    path("today/health/", today.health, name="today-health"),
    path("review/<int:memory_id>/reveal/", today.reveal, name="review-reveal"),
    path("review/<int:memory_id>/grade/", today.grade, name="review-grade"),
    path("palace/", palace.memory_list, name="palace"),
    path("palace/batch/", palace.batch, name="memory-batch"),
    path("palace/m/<int:memory_id>/", palace.memory_detail, name="memory"),
    path("palace/m/<int:memory_id>/edit/", palace.memory_edit, name="memory-edit"),
    path("palace/m/<int:memory_id>/forget/", palace.memory_forget, name="memory-forget"),
    path("palace/m/<int:memory_id>/restore/", palace.memory_restore, name="memory-restore"),
    path("palace/m/<int:memory_id>/checkout/", palace.memory_checkout, name="memory-checkout"),
    path("palace/m/<int:memory_id>/distill-undo/", palace.memory_distill_undo, name="memory-distill-undo"),
    path("palace/e/<int:edge_id>/resolve/", palace.contradiction_resolve, name="contradiction-resolve"),
    path("corridor/", corridor.corridor, name="corridor"),
    path("corridor/rooms/", corridor.rooms, name="corridor-rooms"),
    path("corridor/room/<int:room_id>/", corridor.room, name="corridor-room"),
    path("corridor/m/<int:memory_id>/neighbours/", corridor.neighbours, name="corridor-neighbours"),
    path("corridor/bench/", corridor.bench, name="corridor-bench"),
    path("log/", log.log, name="log"),
    path("judge/", judge.judge, name="judge"),
    path("judge/settings/", judge.judge_settings, name="judge-settings"),
    path("judge/test/", judge.judge_test, name="judge-test"),
    path("judge/p/<int:proposal_id>/apply/", judge.proposal_apply, name="judge-proposal-apply"),
    path("judge/p/<int:proposal_id>/reject/", judge.proposal_reject, name="judge-proposal-reject"),
    path("episodes/", episodes.episodes, name="episodes"),
    path("episodes/<int:memory_id>/nearby/", episodes.nearby, name="episodes-nearby"),
    path("entities/<int:entity_id>/facts/", entity_facts.entity_facts, name="entity-facts"),
]
