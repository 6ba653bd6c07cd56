"""Every server setting, declared once with its default, type, environment name and help."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date
from typing import Any

from benchmark import limits


def _bool(text: str) -> bool:
    """Parse an environment flag (1/0, true/false, yes/no, on/off)."""
    value = text.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(f"expected true or false, got {text!r}")


def _date(text: str) -> date:
    """Parse a date given as YYYY-MM-DD."""
    try:
        return date.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"expected a date as YYYY-MM-DD, got {text!r}") from None


def _feedback(text: str) -> str:
    """Parse the test-feedback mode: full or ladder."""
    value = text.strip().lower()
    if value not in ("full", "ladder"):
        raise ValueError(f"expected full or ladder, got {text!r}")
    return value


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
    Setting("INSTANCE_DIR", None, str,
            "This host's instance folder (SQLite database and secret key when those are not "
            "set, the embedded broker, caches). Unset: instance/ beside the code.",
            "SITUATEDQA_INSTANCE_DIR"),
    Setting("CACHE_DIR", None, str,
            "Folder of this host's caches (rendered plots); deleting it at any moment is "
            "safe: everything in it is rebuilt on demand. Unset: instance/cache.",
            "SITUATEDQA_CACHE_DIR"),
    Setting("BROKER_URL", None, str,
            "Celery broker of the job workers, e.g. redis://127.0.0.1:6379/0 when running "
            "several machines. Unset: the embedded broker, an SQLite file in the instance "
            "folder, served by the one worker that scripts/serve.sh starts.",
            "SITUATEDQA_BROKER_URL"),
    Setting("JOBS_EAGER", False, _bool,
            "Run jobs inside the process that starts them instead of on a job worker "
            "(tests and one-off scripts).", "SITUATEDQA_JOBS_EAGER"),
    Setting("JOB_LEASE_SECONDS", 120, int,
            "Seconds a job step is held by the worker that took it; a step whose lease "
            "passes unfinished (its worker died) is dispatched again.",
            "SITUATEDQA_JOB_LEASE_SECONDS"),
    Setting("JOB_SWEEP_SECONDS", 15, int,
            "How often each job worker looks for steps whose lease has passed.",
            "SITUATEDQA_JOB_SWEEP_SECONDS"),
    Setting("RESCORE_BATCH_SIZE", 200, int,
            "Submissions per rescore batch (one transaction, one Celery message).",
            "SITUATEDQA_RESCORE_BATCH_SIZE"),
    Setting("TEST_DAILY_QUOTA", 5, int,
            "Accepted test-split submissions per team and track per UTC day.",
            "SITUATEDQA_TEST_DAILY_QUOTA"),
    Setting("TEST_TOTAL_QUOTA", 100, int,
            "Accepted test-split submissions per team and track in total.",
            "SITUATEDQA_TEST_TOTAL_QUOTA"),
    Setting("TEST_FEEDBACK", "full", _feedback,
            "What a team learns from a test submission: full (every score) or ladder (its "
            "scores only when a one-sided paired bootstrap shows it better than the team's "
            "best released one on the track's primary metric, p < 0.05; else that one's "
            "scores again). See docs/integrity.md.", "SITUATEDQA_TEST_FEEDBACK"),
    Setting("REJECTED_DAILY_CAP", 50, int,
            "Rejected (invalid) uploads per team per UTC day before uploads get 429; "
            "rejected files never count against the test quota.",
            "SITUATEDQA_REJECTED_DAILY_CAP"),
    Setting("MAX_CONTENT_LENGTH", 32 * MiB, int,
            "Largest request body in bytes (the upload as sent, gzip or not); larger: 413.",
            "SITUATEDQA_MAX_UPLOAD_BYTES"),
    Setting("MAX_DECOMPRESSED_BYTES", limits.MAX_DECOMPRESSED_BYTES, int,
            "Largest prediction file after gzip decompression, in bytes; larger: 413. It "
            "also bounds a request's memory: see Limits.", "SITUATEDQA_MAX_DECOMPRESSED_BYTES"),
    Setting("MAX_GZIP_MEMBERS", limits.MAX_GZIP_MEMBERS, int,
            "Most gzip members (concatenated streams) an upload may hold; more: 413. Real "
            "files have one, or a few.", "SITUATEDQA_MAX_GZIP_MEMBERS"),
    Setting("BOOTSTRAP_RESAMPLES", 2000, int,
            "Bootstrap resamples behind every 95% confidence interval.",
            "SITUATEDQA_BOOTSTRAP_RESAMPLES"),
    Setting("RANK_GROUP_RESAMPLES", 1000, int,
            "Resamples of the paired bootstrap test between neighbours on a board that "
            "forms its rank groups (docs/insight.md); decisions are stored per count.",
            "SITUATEDQA_RANK_GROUP_RESAMPLES"),
    Setting("TOKEN_LIFETIME_DAYS", 90, int,
            "Days until a new API token expires.", "SITUATEDQA_TOKEN_LIFETIME_DAYS"),
    Setting("SESSION_COOKIE_SECURE", True, _bool,
            "Send the session cookie over HTTPS only (browsers also accept it on "
            "http://localhost). Turn off only for plain-HTTP development on other hosts.",
            "SITUATEDQA_SECURE_COOKIES"),
    Setting("SESSION_LIFETIME_HOURS", 12, int,
            "Hours a login lasts.", "SITUATEDQA_SESSION_LIFETIME_HOURS"),
    Setting("RATELIMIT_STORAGE_URI", None, str,
            "Flask-Limiter storage, e.g. redis://127.0.0.1:6379/1. Unset: the broker when it "
            "is Redis, so every worker and host counts together; else memory://, where each "
            "gunicorn worker process counts apart (with 2 workers a limit of 10 per minute "
            "lets up to 20 through). Unreachable: uploads go on without their limit, logins "
            "and registrations answer 503 (see Limits).", "SITUATEDQA_RATELIMIT_STORAGE_URI"),
    Setting("LOGIN_RATE_LIMIT", "10 per minute", str,
            "Login attempts per client address.", "SITUATEDQA_LOGIN_RATE_LIMIT"),
    Setting("REGISTER_RATE_LIMIT", "5 per hour", str,
            "Registrations per client address.", "SITUATEDQA_REGISTER_RATE_LIMIT"),
    Setting("UPLOAD_RATE_LIMIT", "30 per minute", str,
            "Uploads (page and API) per client address.", "SITUATEDQA_UPLOAD_RATE_LIMIT"),
    Setting("DISPUTE_RATE_LIMIT", "20 per day", str,
            "Disputes of the gold (page) per account; unreachable limit storage: they go "
            "on without it (see Limits).", "SITUATEDQA_DISPUTE_RATE_LIMIT"),
    Setting("PROXY_HOPS", 0, int,
            "Reverse proxies in front of the server whose X-Forwarded-For/-Proto to trust "
            "(0: none).", "SITUATEDQA_PROXY_HOPS"),
    Setting("LEADERBOARD_PAGE_SIZE", 50, int,
            "Leaderboard entries per page (the JSON and CSV take ?per_page= up to 1000).",
            "SITUATEDQA_LEADERBOARD_PAGE_SIZE"),
    Setting("TODAY", None, _date,
            "The date the server takes for today (YYYY-MM-DD), which decides whether an "
            "input release is published yet; for demonstrations and tests. Unset: the UTC "
            "date.", "SITUATEDQA_TODAY"),
    Setting("HF_DATASET_ID", "siyue/SituatedQA", str,
            "The Hugging Face Hub dataset that a submission's `.eval_results` entries name "
            "(`dataset.id`). The default is the Hub's copy of the release's loader; a "
            "benchmark dataset registered on the Hub gets its own leaderboard of them.",
            "SITUATEDQA_HF_DATASET_ID"),
)


#: Environment variables read outside the server's Flask config, each where its process starts:
#: gunicorn (situatedqa_server/gunicorn_conf.py), the command-line client (client.py), the
#: CLI's password prompt and the migration that moved files into the database (0005). They are
#: declared here so that every `SITUATEDQA_` name has one home (a test checks); `name` is the
#: environment name, as there is no Flask config key.
PROCESS_SETTINGS: tuple[Setting, ...] = (
    Setting("SITUATEDQA_BIND", "127.0.0.1:8000", str,
            "Address gunicorn listens on (docs/server.md).", "SITUATEDQA_BIND"),
    Setting("SITUATEDQA_THREADS", 4, int,
            "Threads per gunicorn worker (docs/server.md).", "SITUATEDQA_THREADS"),
    Setting("SITUATEDQA_URL", None, str,
            "Server address the `situatedqa` client uses instead of the stored one "
            "(docs/insight.md).", "SITUATEDQA_URL"),
    Setting("SITUATEDQA_TOKEN", None, str,
            "API token the `situatedqa` client uses instead of the stored one "
            "(docs/insight.md).", "SITUATEDQA_TOKEN"),
    Setting("SITUATEDQA_CONFIG_DIR", None, str,
            "Folder of the `situatedqa` client's stored address and token "
            "(docs/insight.md).", "SITUATEDQA_CONFIG_DIR"),
    Setting("SITUATEDQA_PASSWORD", None, str,
            "Password of `users create` when --password is not given (docs/server.md).",
            "SITUATEDQA_PASSWORD"),
    Setting("SITUATEDQA_SUBMISSIONS_DIR", None, str,
            "The old upload folder that migration 0005 moves into the database "
            "(docs/server.md).", "SITUATEDQA_SUBMISSIONS_DIR"),
    Setting("SITUATEDQA_GOLD_DIR", None, str,
            "The old gold folder that migration 0005 moves into the database "
            "(docs/server.md).", "SITUATEDQA_GOLD_DIR"),
)


def declared(name: str) -> Setting:
    """The declaration of a setting by its name (Flask config key, or for PROCESS_SETTINGS
    its environment name): where code or a test needs a setting's default."""
    for setting in SETTINGS + PROCESS_SETTINGS:
        if setting.name == name:
            return setting
    raise KeyError(f"no setting {name!r} in situatedqa_server/settings.py")


def settings_from_env(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Flask config values for every setting, read from the environment or defaulted."""
    environ = os.environ if environ is None else environ
    return {s.name: s.from_env(environ) for s in SETTINGS}
