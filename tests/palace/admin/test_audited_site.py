"""Every change made in the Django admin is on the op log with the staff actor and a required reason.

The walk goes through every model in `admin.site._registry` as a superuser, with the test client, through its change
form, its add form (where the admin allows adding) and its delete page (where it allows deleting): without a reason
the page answers with the error and nothing changes (no row, no op); with one, the change is made and its op row
names the staff member, the reason and what changed. A model registered later fails `test_every_registered_model_is
_walked` until it has a walk here, and the walk fails unless the admin writes the op rows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from django.apps import apps
from django.contrib import admin
from django.contrib.auth.models import Group, Permission
from django.db import models
from django.test import Client
from django.utils import timezone

from palace.actors import Actor
from palace.models import Membership, OpLog, Palace, ProjectRequest
from palace.services import member_set
from tests.palace.admin.forms import form_data

REASON = "ticket 42: checked with the team"


@dataclass
class World:
    root: Any
    alice: Any
    bob: Any
    charlie: Any
    project: Palace
    system: Actor


@dataclass
class Walk:
    make: Callable[[World], models.Model]
    change: dict[str, Any] = field(default_factory=dict)  # form edits; the first key must show in the op's detail
    add: Callable[[World], dict[str, Any]] | None = None  # form edits for the add page (where adding is allowed)
    protected: bool = False  # deleting it is refused by the database's PROTECT (e.g. a palace with an op log)


def _memory(w: World, text: str = "The deploy key rotates on Mondays") -> Any:
    from memory.save import memory_save

    result = memory_save(palace=w.project, actor=Actor.for_user(w.alice), content=text, kind="fact")
    assert result.memory is not None
    return result.memory


def _token(w: World) -> Any:
    from accounts.tokens import token_create

    return token_create(user=w.alice, label="laptop", actor=w.system)[0]


def _user_settings(w: World) -> Any:
    from accounts.models import UserSettings

    return UserSettings.objects.create(user=w.alice)


def _edge(w: World) -> Any:
    from memory.models import Edge

    one, two = _memory(w), _memory(w, "Staging runs on port 8081 only")
    return Edge.objects.create(palace=w.project, from_memory=one, to_memory=two, kind="related")


def _adjudication(w: World) -> Any:
    from memory.models import Adjudication

    return Adjudication.objects.create(palace=w.project, verdict="new", reason="rules: far apart")


def _judge_settings(w: World) -> Any:
    from memory.models import JudgeSettings

    return JudgeSettings.objects.get_or_create(pk=1)[0]


def _card(w: World) -> Any:
    from review.models import ReviewCard

    memory = _memory(w)
    return ReviewCard.objects.create(memory=memory, palace=memory.palace, due_at=timezone.now())


def _card_form(w: World) -> dict[str, Any]:
    memory = _memory(w, "Card-less memory: the release train leaves on Thursdays")
    return {"memory": str(memory.pk), "palace": str(w.project.pk), "due_at_0": "2030-01-02", "due_at_1": "03:04:05"}


def _interval(w: World) -> Any:
    from django_celery_beat.models import IntervalSchedule

    return IntervalSchedule.objects.create(every=5, period=IntervalSchedule.MINUTES)


def _periodic_task(w: World) -> Any:
    from django_celery_beat.models import PeriodicTask

    return PeriodicTask.objects.create(name="probe", task="memory.tasks.decay", interval=_interval(w))


def _access(model_path: str, **extra: Any) -> Callable[[World], Any]:
    def make(w: World) -> Any:
        from django.apps import apps

        model = apps.get_model(model_path)
        fields = {"user_agent": "curl", "ip_address": "127.0.0.1", "username": "mallory", "path_info": "/login/"}
        return model.objects.create(http_accept="*/*", **fields, **extra)

    return make


def _crontab(w: World) -> Any:
    from django_celery_beat.models import CrontabSchedule

    return CrontabSchedule.objects.create(minute="5")


def _solar(w: World) -> Any:
    from django_celery_beat.models import SolarSchedule

    return SolarSchedule.objects.create(event="sunrise", latitude=10, longitude=10)


def _clocked(w: World) -> Any:
    from django_celery_beat.models import ClockedSchedule

    return ClockedSchedule.objects.create(clocked_time=timezone.now())


def _room(w: World) -> Any:
    from palace.models import Room

    return Room.objects.create(palace=w.project, kind="fact", name="Audit Hall", ordinal=99)


def _slot(w: World) -> Any:
    from palace.models import Slot

    return Slot.objects.create(palace=w.project, room=_room(w), number=1)


def _tour_stop(w: World) -> Any:
    from palace.models import TourStop

    return TourStop.objects.create(palace=w.project, seq=999, slot=_slot(w))


def _proposal(w: World) -> Any:
    from memory.models import DistillProposal

    return DistillProposal.objects.create(
        palace=w.project, kind="fact", member_ids=[1, 2], content="Rule: the vault code is 4471", producer="rules"
    )


def _distill_job(w: World) -> Any:
    from memory.models import DistillJob

    return DistillJob.objects.create(
        palace=w.project, user=w.alice, mode="suggest", state="done", result={"clusters": []}
    )


def _entity(w: World) -> Any:
    from tests.entity_rows import make_entity

    return make_entity(w.project, "Carol Ortiz", aliases=["Caro"], memories=[_memory(w)])


def _memory_entity(w: World) -> Any:
    from memory.models import MemoryEntity

    return MemoryEntity.objects.get(entity=_entity(w))


def _fact(w: World) -> Any:
    from memory.models import Fact

    return Fact.objects.create(palace=w.project, entity=_entity(w), content="Carol leads billing")


def _profile_version(w: World) -> Any:
    from memory.context import curated_edit

    return curated_edit(
        palace=w.project, actor=Actor.for_user(w.alice), content="We ship on Fridays.", expected_version=0
    )


def _handoff_version(w: World) -> Any:
    from memory.context import HandoffInput, handoff_save

    data = HandoffInput(doing="migrating the vault", next_steps=["run 0014"])
    return handoff_save(palace=w.project, actor=Actor.for_user(w.alice), data=data, expected_version=0)


def _export_link_use(w: World) -> Any:
    from django.utils import timezone

    from ops.models import ExportLinkUse

    return ExportLinkUse.objects.create(nonce="n-audit", user_id=w.alice.pk, used_at=timezone.now())


def _access_record(w: World) -> Any:
    from memory.models import AccessRecord

    return AccessRecord.objects.create(memory=_memory(w), user=w.alice, rank=1, via="search")


def _search_batch(w: World) -> Any:
    from memory.models import SearchBatch

    return SearchBatch.objects.create(handle="b-audit", user=w.alice, query="where is the vault", refs={"m1": 1})


def _capture_session(w: World) -> Any:
    from capture.models import CaptureSession

    return CaptureSession.objects.create(user=w.alice, palace=w.project, key="s-audit", client="claude-code")


def _capture_turn(w: World) -> Any:
    from capture.models import CaptureTurn

    return CaptureTurn.objects.create(session=_capture_session(w), index=0, role="user", text="Deploys go on Fridays")


def _backfill_run(w: World) -> Any:
    from capture.models import BackfillRun

    return BackfillRun.objects.create(user=w.alice, files=["session.jsonl"])


def _project_request(w: World) -> Any:
    return ProjectRequest.objects.create(origin_key="github.com/atrium-test/wanted", requester=w.charlie)


def _new_user(w: World) -> dict[str, Any]:
    return {"username": "erin", "password1": "a-Long-pass-991", "password2": "a-Long-pass-991"}


def _oauth_client(w: World) -> Any:
    from oauth2_provider.models import Application

    return Application.objects.create(
        name="Team agent",
        client_type="public",
        authorization_grant_type="authorization-code",
        redirect_uris="http://127.0.0.1:9/callback",
    )


WALKS: dict[str, Walk] = {
    "auth.group": Walk(lambda w: Group.objects.create(name="auditors"), {"name": "readers"}, lambda w: {"name": "ops"}),
    "auth.user": Walk(lambda w: w.charlie, {"is_active": None}, _new_user, protected=True),
    "palace.palace": Walk(
        lambda w: w.project,
        {"name": "Demo (renamed)"},
        lambda w: {"kind": "project", "name": "Other", "origin_key": "github.com/atrium-test/other"},
        protected=True,
    ),
    "palace.membership": Walk(
        lambda w: Membership.objects.get(palace=w.project, user=w.bob),
        {"role": "editor"},
        lambda w: {"palace": str(w.project.pk), "user": str(w.charlie.pk), "role": "viewer"},
    ),
    "palace.projectrequest": Walk(_project_request),  # decided by its actions only (tests/palace/test_approval.py)
    "palace.room": Walk(_room),
    "palace.slot": Walk(_slot),
    "palace.tourstop": Walk(_tour_stop),
    "memory.distillproposal": Walk(_proposal),
    "memory.distilljob": Walk(_distill_job),
    "palace.oplog": Walk(lambda w: OpLog.objects.filter(palace=w.project).earliest("id")),
    "accounts.apitoken": Walk(_token),
    "oauth2_provider.application": Walk(
        _oauth_client,
        {"name": "Team agent (renamed)"},
        lambda w: {
            "name": "Added agent",
            "client_type": "public",
            "authorization_grant_type": "authorization-code",
            "redirect_uris": "http://127.0.0.1:9/callback",
            "algorithm": "",
        },
    ),
    "accounts.usersettings": Walk(
        _user_settings,
        {"search_fallback": "overview"},
        lambda w: {"user": str(w.charlie.pk), "search_fallback": "overview"},
    ),
    "memory.memory": Walk(_memory),
    "memory.edge": Walk(_edge),
    "memory.judgesettings": Walk(
        _judge_settings,
        {"model": "judge-mini"},
        lambda w: {"base_url": "http://127.0.0.1:9/v1", "model": "judge-mini", "timeout_ms": "3000"},
    ),
    "memory.adjudication": Walk(_adjudication),
    "memory.entity": Walk(_entity),
    "memory.memoryentity": Walk(_memory_entity),
    "memory.fact": Walk(_fact),
    "memory.profileversion": Walk(_profile_version),
    "memory.handoffversion": Walk(_handoff_version),
    "memory.accessrecord": Walk(_access_record),
    "ops.exportlinkuse": Walk(_export_link_use),
    "memory.searchbatch": Walk(_search_batch),
    "capture.capturesession": Walk(_capture_session),
    "capture.captureturn": Walk(_capture_turn),
    "capture.backfillrun": Walk(_backfill_run),
    "review.reviewcard": Walk(_card, {"active": None}, lambda w: _card_form(w)),
    "django_celery_beat.periodictask": Walk(
        _periodic_task,
        {"enabled": None},
        lambda w: {"name": "nightly", "task": "memory.tasks.decay", "interval": str(_interval(w).pk)},
    ),
    "django_celery_beat.intervalschedule": Walk(
        _interval, {"every": "6"}, lambda w: {"every": "9", "period": "minutes"}
    ),
    "django_celery_beat.crontabschedule": Walk(_crontab, {"minute": "7"}, lambda w: {"minute": "9", "hour": "1"}),
    "django_celery_beat.solarschedule": Walk(
        _solar, {"latitude": "11"}, lambda w: {"event": "sunset", "latitude": "1", "longitude": "2"}
    ),
    "django_celery_beat.clockedschedule": Walk(
        _clocked, {}, lambda w: {"clocked_time_0": "2030-01-02", "clocked_time_1": "03:04:05"}
    ),
    "axes.accessattempt": Walk(_access("axes.AccessAttempt", get_data="", post_data="", failures_since_start=1)),
    "axes.accesslog": Walk(_access("axes.AccessLog")),
    "axes.accessfailurelog": Walk(_access("axes.AccessFailureLog")),
}


def registered() -> list[str]:
    return sorted(model._meta.label_lower for model in admin.site._registry)


@pytest.fixture
def world(make_user: Callable[..., Any], project: Palace, alice: Any, bob: Any, charlie: Any, system: Actor) -> World:
    return World(make_user("root", admin=True), alice, bob, charlie, project, system)


@pytest.fixture
def root_client(world: World) -> Client:
    client = Client()
    client.force_login(world.root)
    return client


def test_every_registered_model_is_walked() -> None:
    assert registered() == sorted(WALKS), "a model registered in the admin needs a walk in WALKS"


ROOT = Path(__file__).resolve().parents[3]


def project_models() -> list[str]:
    """Every model of Atrium's own apps (the packages at the root of the repository), read from the app registry:
    a model added later is on this list without anyone writing it down."""
    return sorted(
        model._meta.label_lower
        for config in apps.get_app_configs()
        if Path(config.path).resolve().parent == ROOT
        for model in config.get_models()
    )


def test_every_model_of_the_project_is_in_the_audited_admin() -> None:
    """With the test above, every model is walked: audited, and (where the admin allows it) changed, added and
    deleted with a reason and an op row. A model missing from the admin fails here, by name."""
    ours = project_models()
    assert {"palace.oplog", "memory.memory", "review.reviewcard"} <= set(ours)  # the registry was read
    missing = sorted(set(ours) - set(registered()))
    assert missing == [], f"models of the project not in the admin (register them, then add a walk): {missing}"


def _model(label: str) -> type[models.Model]:
    return next(m for m in admin.site._registry if m._meta.label_lower == label)


def _url(model: type[models.Model], view: str, *args: Any) -> str:
    from django.urls import reverse

    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_{view}", args=args)


def _row(model: type[models.Model], pk: Any) -> dict[str, Any] | None:
    return model._default_manager.filter(pk=pk).values().first()


def _ops(root: Any) -> list[OpLog]:
    return list(OpLog.objects.filter(actor_user=root, op__startswith="admin.").order_by("id"))


def _as_request(user: Any) -> Any:
    from django.test import RequestFactory

    request = RequestFactory().get("/admin/")
    request.user = user
    return request


@pytest.mark.parametrize("label", registered())
def test_admin_change_needs_a_reason_and_writes_the_op_row(label: str, world: World, root_client: Client) -> None:
    walk, model = WALKS[label], _model(label)
    model_admin = admin.site._registry[model]
    obj = walk.make(world)
    url = _url(model, "change", obj.pk)
    page = root_client.get(url)
    assert page.status_code == 200
    if not model_admin.has_change_permission(_as_request(world.root), obj):
        assert 'name="reason"' not in page.content.decode()  # read-only: nothing to give a reason for
        assert root_client.post(url, {"reason": REASON}).status_code == 403
        assert _ops(world.root) == []
        return
    assert page.content.decode().count('name="reason"') == 1  # one reason field, in its own fieldset
    data = form_data(page.content.decode(), f"{model._meta.model_name}_form", walk.change)
    before, ops_before = _row(model, obj.pk), _ops(world.root)

    refused = root_client.post(url, data)
    assert refused.status_code == 200, "a change without a reason is refused"
    assert "reason" in refused.context["adminform"].form.errors
    assert _row(model, obj.pk) == before and _ops(world.root) == ops_before  # nothing changed, nothing logged

    done = root_client.post(url, {**data, "reason": REASON})
    assert done.status_code == 302, done.context and done.context["adminform"].form.errors
    (op,) = _ops(world.root)[len(ops_before) :]
    assert (op.op, op.target_kind, op.target_id, op.reason) == ("admin.change", model._meta.model_name, obj.pk, REASON)
    assert (op.actor_user_id, op.actor_name, op.detail["model"]) == (world.root.pk, "admin", label)
    if walk.change:
        assert next(iter(walk.change)) in op.detail["changed"], op.detail
        assert _row(model, obj.pk) != before


@pytest.mark.parametrize("label", registered())
def test_admin_add_needs_a_reason_and_writes_the_op_row(label: str, world: World, root_client: Client) -> None:
    walk, model = WALKS[label], _model(label)
    if not admin.site._registry[model].has_add_permission(_as_request(world.root)):
        assert root_client.get(_url(model, "add")).status_code == 403
        return
    assert walk.add is not None, f"{label} can be added in the admin: its walk needs add data"
    url = _url(model, "add")
    data = form_data(root_client.get(url).content.decode(), f"{model._meta.model_name}_form", walk.add(world))
    count, ops_before = model._default_manager.count(), _ops(world.root)

    refused = root_client.post(url, data)
    assert refused.status_code == 200 and "reason" in refused.context["adminform"].form.errors
    assert model._default_manager.count() == count and _ops(world.root) == ops_before

    done = root_client.post(url, {**data, "reason": REASON})
    assert done.status_code == 302, done.context and done.context["adminform"].form.errors
    assert model._default_manager.count() == count + 1
    op = next(o for o in _ops(world.root)[len(ops_before) :] if o.op == "admin.add")
    assert (op.target_kind, op.reason, op.actor_user_id) == (model._meta.model_name, REASON, world.root.pk)
    assert model._default_manager.filter(pk=op.target_id).exists()


@pytest.mark.parametrize("label", registered())
def test_admin_delete_needs_a_reason_and_writes_the_op_row(label: str, world: World, root_client: Client) -> None:
    walk, model = WALKS[label], _model(label)
    obj = walk.make(world)
    url = _url(model, "delete", obj.pk)
    if not admin.site._registry[model].has_delete_permission(_as_request(world.root), obj):
        assert root_client.post(url, {"post": "yes", "reason": REASON}).status_code == 403
        assert _row(model, obj.pk) is not None
        return
    ops_before = _ops(world.root)
    if walk.protected:  # the database keeps it (its history refers to it): refused, nothing logged
        page = root_client.post(url, {"post": "yes", "reason": REASON})
        assert page.status_code == 200 and "Cannot delete" in page.content.decode()
        assert _row(model, obj.pk) is not None and _ops(world.root) == ops_before
        return
    refused = root_client.post(url, {"post": "yes"})
    assert refused.status_code == 200 and "A reason is required" in refused.content.decode()
    assert _row(model, obj.pk) is not None and _ops(world.root) == ops_before

    root_client.post(url, {"post": "yes", "reason": REASON})
    assert _row(model, obj.pk) is None
    (op,) = _ops(world.root)[len(ops_before) :]
    assert (op.op, op.target_id, op.reason, op.actor_user_id) == ("admin.delete", obj.pk, REASON, world.root.pk)
    assert op.detail["before"]["id"] == obj.pk


def test_a_user_created_in_the_admin_gets_a_personal_palace(world: World, root_client: Client) -> None:
    url = _url(_model("auth.user"), "add")
    data = form_data(root_client.get(url).content.decode(), "user_form", _new_user(world))
    assert root_client.post(url, {**data, "reason": REASON}).status_code == 302
    palace = Palace.objects.get(personal_owner__username="erin")
    assert Membership.objects.filter(palace=palace, user__username="erin", role="owner").exists()
    created = OpLog.objects.get(op="palace.create", palace=palace)
    assert created.actor_user_id == world.root.pk
    # the positive control: the walk's palace already had its own, from `atrium createuser`'s path
    assert Palace.objects.filter(personal_owner=world.alice).exists()


def test_password_change_needs_a_reason_and_never_records_the_password(world: World, root_client: Client) -> None:
    url = _url(_model("auth.user"), "password_change", world.charlie.pk)
    password = {"password1": "N3w-secret-pass!", "password2": "N3w-secret-pass!", "usable_password": "true"}
    refused = root_client.post(url, password)
    assert refused.status_code == 200 and "A reason is required" in refused.content.decode()
    world.charlie.refresh_from_db()
    assert world.charlie.check_password("correct-horse-9")

    assert root_client.post(url, {**password, "reason": REASON}).status_code == 302
    world.charlie.refresh_from_db()
    assert world.charlie.check_password("N3w-secret-pass!")
    op = OpLog.objects.get(op="admin.change", target_kind="user", target_id=world.charlie.pk)
    assert op.reason == REASON and "N3w-secret-pass!" not in str(op.detail)
    assert op.detail["changed"]["password"]["after"] == "(secret, not recorded)"


def test_bulk_delete_asks_for_the_reason_and_logs_each_row(world: World, root_client: Client) -> None:
    member_set(palace=world.project, user=world.charlie, role="viewer", actor=world.system)
    pks = list(Membership.objects.filter(palace=world.project, role="viewer").values_list("pk", flat=True))
    url = _url(Membership, "changelist")
    chosen = {"action": "delete_selected", "_selected_action": pks}
    assert 'name="reason"' in root_client.post(url, chosen).content.decode()  # the confirmation asks for it
    root_client.post(url, {**chosen, "post": "yes"})
    assert Membership.objects.filter(pk__in=pks).count() == 2 and not _ops(world.root)

    root_client.post(url, {**chosen, "post": "yes", "reason": REASON})
    assert not Membership.objects.filter(pk__in=pks).exists()
    ops = _ops(world.root)
    assert sorted(o.target_id or 0 for o in ops) == sorted(pks) and {o.op for o in ops} == {"admin.delete"}
    assert {o.palace_id for o in ops} == {world.project.pk}


def test_an_action_needs_a_reason_and_writes_one_row_beside_the_services(world: World, root_client: Client) -> None:
    memory = _memory(world)
    url = _url(_model("memory.memory"), "changelist")
    chosen = {"action": "forget_memories", "_selected_action": [memory.pk]}
    root_client.post(url, chosen)
    memory.refresh_from_db()
    assert memory.status == "active" and not _ops(world.root)

    root_client.post(url, {**chosen, "reason": REASON})
    memory.refresh_from_db()
    assert memory.status == "forgotten"
    (op,) = _ops(world.root)
    assert (op.op, op.reason, op.palace_id, op.detail["ids"]) == ("admin.action", REASON, world.project.pk, [memory.pk])
    forget = OpLog.objects.get(op="memory.forget", target_id=memory.pk)
    assert (forget.reason, forget.actor_user_id) == (REASON, world.root.pk)


def test_tokens_are_revoked_through_the_service_and_secrets_never_reach_the_detail(
    world: World, root_client: Client
) -> None:
    token = _token(world)
    url = _url(_model("accounts.apitoken"), "changelist")
    root_client.post(url, {"action": "revoke_tokens", "_selected_action": [token.pk], "reason": REASON})
    token.refresh_from_db()
    assert token.revoked_at is not None
    assert OpLog.objects.filter(op="token.revoke", target_id=token.pk, actor_user=world.root).exists()
    other = _token(world)
    root_client.post(url, {"action": "revoke_tokens", "_selected_action": [other.pk]})  # no reason: refused
    other.refresh_from_db()
    assert other.revoked_at is None


def test_op_rows_shown_in_the_admin_never_show_a_token_hash(world: World, root_client: Client) -> None:
    """A token's life through the admin (created, its default project set on its change form, revoked by the action)
    leaves op rows; the console's list, each row's page and both exports show those rows (their label, the positive
    control) and never the token's hash, whole or any 16 characters of it. A posted key_hash is ignored, and the
    recorders mask a hash field wherever one reaches them (a form that had one, a deleted row's snapshot)."""
    from django.forms import modelform_factory

    from accounts.models import ApiToken
    from palace.admin_site import MASK, form_changes, snapshot

    token = _token(world)
    secret = token.key_hash
    model = _model("accounts.apitoken")
    page = root_client.get(_url(model, "change", token.pk)).content.decode()
    data = form_data(page, "apitoken_form", {"default_project": str(world.project.pk)})
    forged = {**data, "key_hash": "0" * 64, "reason": REASON}
    assert root_client.post(_url(model, "change", token.pk), forged).status_code == 302
    chosen = {"action": "revoke_tokens", "_selected_action": [token.pk], "reason": REASON}
    root_client.post(_url(model, "changelist"), chosen)
    token.refresh_from_db()
    assert token.default_project_id == world.project.pk and token.revoked_at is not None
    assert token.key_hash == secret  # the posted hash changed nothing

    rows = OpLog.objects.filter(target_kind__in=("token", "apitoken")).order_by("pk")
    assert [r.op for r in rows] == ["token.create", "admin.change", "token.revoke", "admin.action"]
    windows = {secret[i : i + 16] for i in range(len(secret) - 15)}
    console = "/admin/palace/oplog/"
    listing = root_client.get(console).content.decode()
    exports = [
        b"".join(root_client.get(f"{console}export/", {"format": f}).streaming_content).decode()
        for f in ("csv", "json")
    ]
    pages = [(r.op, root_client.get(f"{console}{r.pk}/change/").content.decode()) for r in rows]
    for text in [listing, *exports]:
        assert all(r.op in text for r in rows) and "laptop" in text  # the rows are there
        assert not any(w in text for w in windows)
    for op, text in pages:
        assert f"<title>{op} " in text and not any(w in text for w in windows)

    form = modelform_factory(ApiToken, fields=["label", "key_hash"])(
        data={"label": "laptop-2", "key_hash": "f" * 64}, instance=ApiToken.objects.get(pk=token.pk)
    )
    assert form.is_valid(), form.errors
    assert form_changes(form) == {
        "label": {"before": "laptop", "after": "laptop-2"},
        "key_hash": {"before": MASK, "after": MASK},
    }
    recorded = snapshot(token)
    assert recorded["key_hash"] == MASK and recorded["label"] == "laptop" and recorded["prefix"] == token.prefix


def test_a_model_admin_that_escapes_the_audit_fails_the_system_check() -> None:
    from palace.admin_site import check_admin_audited

    assert check_admin_audited() == []
    model = _model("auth.group")
    audited_admin = admin.site._registry[model]
    admin.site._registry[model] = admin.ModelAdmin(model, admin.site)  # put in behind the site's back
    try:
        assert [e.id for e in check_admin_audited()] == ["palace.E020"]
    finally:
        admin.site._registry[model] = audited_admin


def test_staff_without_the_body_permission_reads_the_trail_not_the_contents(
    world: World, make_user: Callable[..., Any], root_client: Client
) -> None:
    memory = _memory(world, "The vault code is 4471 under the blue mug")
    root_client.post(
        _url(Membership, "change", Membership.objects.get(palace=world.project, user=world.bob).pk),
        {**_membership_form(root_client, world), "role": "editor", "reason": REASON},
    )
    auditor = make_user("auditor")
    auditor.is_staff = True
    auditor.save()
    auditor.user_permissions.set(Permission.objects.filter(codename__in=["view_oplog", "view_memory"]))
    client = Client()
    client.force_login(auditor)
    trail = client.get(_url(OpLog, "changelist")).content.decode()
    assert "admin.change" in trail and REASON in trail  # the audit trail
    body = client.get(_url(_model("memory.memory"), "change", memory.pk)).content.decode()
    assert "4471" not in body and "hidden" in body
    proposal = _proposal(world)
    auditor.user_permissions.add(Permission.objects.get(codename="view_distillproposal"))
    client.force_login(auditor)
    page = client.get(_url(_model("memory.distillproposal"), "change", proposal.pk)).content.decode()
    assert "4471" not in page and "hidden" in page
    reader = make_user("reader")
    reader.is_staff = True
    reader.save()
    reader.user_permissions.set(
        Permission.objects.filter(codename__in=["view_memory", "view_memory_body", "view_distillproposal"])
    )
    client.force_login(reader)
    assert "4471" in client.get(_url(_model("memory.memory"), "change", memory.pk)).content.decode()
    assert "4471" in client.get(_url(_model("memory.distillproposal"), "change", proposal.pk)).content.decode()


def test_the_admin_acts_as_the_system_under_row_level_security(
    world: World, root_client: Client, make_user: Callable[..., Any]
) -> None:
    """The staff member is no member of alice's personal palace; the admin (as the system, config/middleware.py)
    still reaches its rows and the change commits with its op row. A person who is not staff gets no admin."""
    from palace import rls
    from review.models import ReviewCard

    memory = memory_in_personal_palace(world)
    card = ReviewCard.objects.create(memory=memory, palace=memory.palace, due_at=timezone.now())
    url = _url(ReviewCard, "change", card.pk)
    with rls.acting_as_nobody():
        data = form_data(root_client.get(url).content.decode(), "reviewcard_form", {"active": None})
        assert root_client.post(url, {**data, "reason": REASON}).status_code == 302
        assert not ReviewCard.objects.filter(pk=card.pk).exists()  # invisible to nobody: the admin was the system
        outsider = Client()
        outsider.force_login(world.charlie)
        assert outsider.get(url).status_code == 302  # to the admin's login page
    card.refresh_from_db()
    assert card.active is False
    op = OpLog.objects.get(op="admin.change", target_kind="reviewcard", target_id=card.pk)
    assert (op.palace_id, op.actor_user_id) == (memory.palace_id, world.root.pk)


def memory_in_personal_palace(w: World) -> Any:
    from memory.save import memory_save

    palace = Palace.objects.get(personal_owner=w.alice)
    result = memory_save(palace=palace, actor=Actor.for_user(w.alice), content="Alice keeps notes", kind="fact")
    assert result.memory is not None
    return result.memory


def _membership_form(client: Client, world: World) -> dict[str, Any]:
    pk = Membership.objects.get(palace=world.project, user=world.bob).pk
    return form_data(client.get(_url(Membership, "change", pk)).content.decode(), "membership_form")


def test_a_member_added_through_the_palace_inline_is_in_the_palace_change_row(
    world: World, root_client: Client
) -> None:
    url = _url(Palace, "change", world.project.pk)
    data = form_data(root_client.get(url).content.decode(), "palace_form")
    prefix = next(k for k in data if k.endswith("-TOTAL_FORMS")).removesuffix("-TOTAL_FORMS")
    n = int(data[f"{prefix}-TOTAL_FORMS"])
    data.update({f"{prefix}-TOTAL_FORMS": str(n + 1), f"{prefix}-{n}-user": str(world.charlie.pk)})
    data.update({f"{prefix}-{n}-role": "viewer", f"{prefix}-{n}-palace": str(world.project.pk)})
    assert root_client.post(url, data).status_code == 200  # no reason: refused
    assert not Membership.objects.filter(palace=world.project, user=world.charlie).exists()

    assert root_client.post(url, {**data, "reason": REASON}).status_code == 302
    added = Membership.objects.get(palace=world.project, user=world.charlie)
    (op,) = _ops(world.root)
    assert op.op == "admin.change" and op.palace_id == world.project.pk
    assert op.detail["changed"] == {} and op.detail["inlines"][0]["added"] == [added.pk]
