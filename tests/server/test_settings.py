"""Settings: declared once, each settable from the environment, each documented."""

from __future__ import annotations

from pathlib import Path

import pytest

from situatedqa_server.settings import SETTINGS, settings_from_env

DOCS = Path(__file__).resolve().parents[2] / "docs" / "server.md"


def test_every_setting_is_documented() -> None:
    text = DOCS.read_text()
    missing = [s.env for s in SETTINGS if f"`{s.env}`" not in text]
    assert missing == []


def test_required_environment_names_exist() -> None:
    names = {s.env for s in SETTINGS}
    assert {"DATABASE_URL", "SECRET_KEY", "SITUATEDQA_DATA", "SITUATEDQA_TEST_DAILY_QUOTA",
            "SITUATEDQA_TEST_TOTAL_QUOTA", "SITUATEDQA_MAX_UPLOAD_BYTES",
            "SITUATEDQA_MAX_DECOMPRESSED_BYTES"} <= names
    assert all(s.help for s in SETTINGS)


def test_settings_are_read_from_the_environment() -> None:
    config = settings_from_env({"SITUATEDQA_TEST_DAILY_QUOTA": "9", "DATABASE_URL": "sqlite://",
                                "SITUATEDQA_SECURE_COOKIES": "off"})
    assert config["TEST_DAILY_QUOTA"] == 9
    assert config["SQLALCHEMY_DATABASE_URI"] == "sqlite://"
    assert config["SESSION_COOKIE_SECURE"] is False
    with pytest.raises(ValueError, match="SITUATEDQA_TEST_TOTAL_QUOTA"):
        settings_from_env({"SITUATEDQA_TEST_TOTAL_QUOTA": "many"})


def test_an_app_makes_its_instance_folder_only_when_it_keeps_something_there(
        tmp_path: Path) -> None:
    from situatedqa_server import create_app

    configured = tmp_path / "configured"
    create_app({"INSTANCE_DIR": str(configured), "SECRET_KEY": "k", "JOBS_EAGER": True,
                "SQLALCHEMY_DATABASE_URI": f"sqlite:///{tmp_path / 'db.sqlite'}"})
    assert not configured.exists()
    defaults = tmp_path / "defaults"
    app = create_app({"INSTANCE_DIR": str(defaults)})
    assert defaults.is_dir() and (defaults / "secret_key").is_file()
    assert app.config["SQLALCHEMY_DATABASE_URI"] == f"sqlite:///{defaults / 'situatedqa.db'}"
