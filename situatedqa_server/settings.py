"""Every server setting, declared once with its default, type, environment name and help."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any


def _bool(text: str) -> bool:
    """Parse an environment flag (1/0, true/false, yes/no, on/off)."""
    value = text.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(f"expected true or false, got {text!r}")


@dataclass(frozen=True)
class Setting:
    """One configuration key: Flask config name, default, parser, environment name, help."""

    name: str
    default: Any
    type: Callable[[str], Any]
    help: str
    env: str

    def from_env(self, environ: Mapping[str, str]) -> Any:
        """The value from the environment when set, else the default."""
        raw = environ.get(self.env)
        if raw is None:
            return self.default
        try:
            return self.type(raw)
        except ValueError as exc:
            raise ValueError(f"environment variable {self.env}: {exc}") from None


MiB = 1024 * 1024

#: The single declarative list of settings; docs/server.md documents each (a test checks).
SETTINGS: tuple[Setting, ...] = (
    Setting("SECRET_KEY", None, str,
            "Key that signs session cookies and CSRF tokens; set the same value on every "
            "host. Unset: a random key is created once in the instance folder.", "SECRET_KEY"),
    Setting("SQLALCHEMY_DATABASE_URI", None, str,
            "Database URL, e.g. postgresql+psycopg://user@host/db. Unset: SQLite file "
            "situatedqa.db in the instance folder.", "DATABASE_URL"),
    Setting("SITUATEDQA_DATA", None, str,
            "Folder of the official release that `gold import` reads by default "
            "(else gold/release).", "SITUATEDQA_DATA"),
    Setting("GOLD_DIR", None, str,
            "Folder of the canonical gold that workers load. Unset: instance/gold.",
            "SITUATEDQA_GOLD_DIR"),
    Setting("SUBMISSIONS_DIR", None, str,
            "Content-addressed, write-once store of uploaded files. Unset: the repository's "
            "submissions/ folder.", "SITUATEDQA_SUBMISSIONS_DIR"),
    Setting("TEST_DAILY_QUOTA", 5, int,
            "Accepted test-split submissions per team and track per UTC day.",
            "SITUATEDQA_TEST_DAILY_QUOTA"),
    Setting("TEST_TOTAL_QUOTA", 100, int,
            "Accepted test-split submissions per team and track in total.",
            "SITUATEDQA_TEST_TOTAL_QUOTA"),
    Setting("REJECTED_DAILY_CAP", 50, int,
            "Rejected (invalid) uploads per team per UTC day before uploads get 429; "
            "rejected files never count against the test quota.",
            "SITUATEDQA_REJECTED_DAILY_CAP"),
    Setting("MAX_CONTENT_LENGTH", 32 * MiB, int,
            "Largest request body in bytes (the upload as sent, gzip or not); larger: 413.",
            "SITUATEDQA_MAX_UPLOAD_BYTES"),
    Setting("MAX_DECOMPRESSED_BYTES", 64 * MiB, int,
            "Largest prediction file after gzip decompression, in bytes; larger: 413.",
            "SITUATEDQA_MAX_DECOMPRESSED_BYTES"),
    Setting("BOOTSTRAP_RESAMPLES", 2000, int,
            "Bootstrap resamples behind every 95% confidence interval.",
            "SITUATEDQA_BOOTSTRAP_RESAMPLES"),
    Setting("TOKEN_LIFETIME_DAYS", 90, int,
            "Days until a new API token expires.", "SITUATEDQA_TOKEN_LIFETIME_DAYS"),
    Setting("SESSION_COOKIE_SECURE", True, _bool,
            "Send the session cookie over HTTPS only (browsers also accept it on "
            "http://localhost). Turn off only for plain-HTTP development on other hosts.",
            "SITUATEDQA_SECURE_COOKIES"),
    Setting("SESSION_LIFETIME_HOURS", 12, int,
            "Hours a login lasts.", "SITUATEDQA_SESSION_LIFETIME_HOURS"),
    Setting("RATELIMIT_STORAGE_URI", "memory://", str,
            "Flask-Limiter storage; use redis://… or memcached://… to share limits across "
            "workers and hosts.", "SITUATEDQA_RATELIMIT_STORAGE_URI"),
    Setting("LOGIN_RATE_LIMIT", "10 per minute", str,
            "Login attempts per client address.", "SITUATEDQA_LOGIN_RATE_LIMIT"),
    Setting("REGISTER_RATE_LIMIT", "5 per hour", str,
            "Registrations per client address.", "SITUATEDQA_REGISTER_RATE_LIMIT"),
    Setting("UPLOAD_RATE_LIMIT", "30 per minute", str,
            "Uploads (page and API) per client address.", "SITUATEDQA_UPLOAD_RATE_LIMIT"),
    Setting("PROXY_HOPS", 0, int,
            "Reverse proxies in front of the server whose X-Forwarded-For/-Proto to trust "
            "(0: none).", "SITUATEDQA_PROXY_HOPS"),
    Setting("LEADERBOARD_PAGE_SIZE", 50, int,
            "Leaderboard entries per page (the JSON and CSV take ?per_page= up to 1000).",
            "SITUATEDQA_LEADERBOARD_PAGE_SIZE"),
)


def settings_from_env(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Flask config values for every setting, read from the environment or defaulted."""
    environ = os.environ if environ is None else environ
    return {s.name: s.from_env(environ) for s in SETTINGS}
