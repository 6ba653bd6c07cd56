"""Issue 10: the upload path's shortcuts keep every result the plain path gives."""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path
from typing import Any

import click
import pytest
from flask import Flask
from flask.testing import FlaskCliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import inspect, select
from sqlalchemy.orm import Session
from sqlalchemy.sql.compiler import SQLCompiler

from benchmark import GoldSet, Predictions, equivalence, score
from benchmark.normalize import normalize_many
from benchmark.scoring import warm_lenient
from situatedqa_server.extensions import db
from situatedqa_server.models import AuditLog, BoardStamp, Score, Submission, User
from situatedqa_server.services import blobs, duplicates, scoring
from situatedqa_server.wrappers import InMemoryPart

from .conftest import new_token, prediction_file, register

#: Any text, lone surrogates and control characters included.
TEXT = st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF), max_size=30)


def stdlib_canonical(content: dict[str, object]) -> bytes:
    """The canonical JSON as the first digests were computed (stdlib json)."""
    text = json.dumps(content, ensure_ascii=False, separators=(",", ":"))
    return text.encode("utf-8", "surrogatepass")


@settings(max_examples=300, deadline=None)
@given(answers=st.lists(TEXT, max_size=8), track=st.sampled_from(["temp", "geo"]))
def test_canonical_json_is_the_stdlib_bytes(answers: list[str], track: str) -> None:
    content: dict[str, object] = {"track": track, "split": "dev", "answers": answers}
    assert duplicates.canonical_json(content) == stdlib_canonical(content)


def test_digest_is_the_sha256_of_the_normalized_answers() -> None:
    answers = ("The Beatles!", "  1945 ", "Paris, France")
    predictions = Predictions(track="temp", split="dev", format="jsonl", answers=answers)
    normalized = ["beatles", "1945", "paris france"]
    expected = hashlib.sha256(stdlib_canonical(
        {"track": "temp", "split": "dev", "answers": normalized})).hexdigest()
    assert normalize_many(answers) == normalized
    assert duplicates.digest(predictions) == expected


def test_warm_lenient_builds_what_scoring_reads(release_gold: GoldSet,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker's warm-up parses the lenient metrics' gold: its first uploads parse nothing."""
    gold = release_gold.get("temp", "dev")
    warm_lenient(gold)

    def no_build(*_: object) -> None:
        raise AssertionError("the gold forms were built again")

    monkeypatch.setattr(equivalence.GoldForms, "__init__", no_build)
    answers = tuple(e.any_answers[-1] if e.any_answers else "" for e in gold.examples)
    predictions = Predictions(track="temp", split="dev", format="jsonl", answers=answers)
    result = score(gold, predictions, resamples=0)
    assert result.metrics["em_any"] == 100.0 and result.metrics["em_equiv_any"] == 100.0


# --- the upload's own statements: what a flush would have stored, on both databases ---------


def _stamps() -> dict[tuple[str, str], int]:
    """Every board's generation."""
    return {(track, split): generation for track, split, generation in db.session.execute(
        select(BoardStamp.track, BoardStamp.split, BoardStamp.generation))}


def test_the_stored_submission_is_the_row_read_back(app: Flask, release_gold: GoldSet) -> None:
    """The Core insert leaves the object as a flush would: every column loaded (no read
    later), equal to the row as stored, defaults included; only its board's stamp moves."""
    client = app.test_client()
    register(client, "alice")
    new_token(client)
    gold = release_gold.get("geo", "dev")
    with app.app_context():
        user = db.session.scalars(select(User).where(User.username == "alice")).one()
        before = _stamps()
        meta = scoring.SubmissionMeta(method_name="core insert", public=True,
                                      paper_url="https://example.org/paper")
        columns = {prop.key for prop in inspect(Submission).column_attrs}
        seen: dict[str, Any] = {}

        def before_commit(submission: Submission, shown: Score) -> None:
            # What the response is built from, just before the commit expires everything.
            state = inspect(submission)
            seen.update(persistent=state.persistent, shown=shown.submission_id,
                        missing=(state.unloaded | state.expired_attributes) & columns,
                        own={key: getattr(submission, key) for key in columns})

        scoring.submit(user, "geo", "dev", prediction_file(gold, 700), "predictions.jsonl",
                       meta, before_commit)
        after = _stamps()
    assert seen["persistent"] and seen["missing"] == set()
    own = seen["own"]
    assert seen["shown"] == own["id"]
    with app.app_context():
        stored = db.session.execute(select(Submission.__table__).where(
            Submission.id == own["id"])).one()._asdict()
        audit = db.session.scalars(select(AuditLog).where(AuditLog.target_id == own["id"])).one()
    assert own == {inspect(Submission).get_property_by_column(column).key: stored[column.key]
                   for column in Submission.__table__.columns}
    assert stored["hidden"] is False and stored["is_baseline"] is False
    assert stored["visibility"] == "public" and stored["deleted_at"] is None
    assert (audit.action, audit.actor, audit.target_type) == ("publish", "alice", "submission")
    assert after[("geo", "dev")] == before.get(("geo", "dev"), 0) + 1
    assert {board: n for board, n in after.items() if board != ("geo", "dev")} == {
        board: n for board, n in before.items() if board != ("geo", "dev")}


def test_an_upload_compiles_no_sql_and_runs_no_flush(app: Flask, release_gold: GoldSet,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """After the first upload every statement of the path comes from SQLAlchemy's cache and
    the commit has nothing to flush: a statement built uncacheably (a multi-row VALUES
    insert) or a row left marked changed would cost each upload about 0.5 ms."""
    client = app.test_client()
    register(client, "alice")
    headers = {"Authorization": f"Bearer {new_token(client)}"}
    gold = release_gold.get("temp", "test")
    counts = {"compiled": 0, "flushes": 0}
    compiler_init = SQLCompiler.__init__
    session_flush = Session._flush

    def counting_init(self: SQLCompiler, *args: Any, **kwargs: Any) -> None:
        counts["compiled"] += 1
        compiler_init(self, *args, **kwargs)

    def counting_flush(self: Session, *args: Any, **kwargs: Any) -> None:
        counts["flushes"] += 1
        session_flush(self, *args, **kwargs)

    def upload(correct: int) -> None:
        response = client.post("/api/v1/submissions", headers=headers, data={
            "track": "temp", "split": "test", "method_name": f"m{correct}", "public": "true",
            "file": (io.BytesIO(prediction_file(gold, correct)), "p.jsonl")})
        assert response.status_code == 201, response.get_json()

    upload(100)  # compiles and caches every statement
    monkeypatch.setattr(SQLCompiler, "__init__", counting_init)
    monkeypatch.setattr(Session, "_flush", counting_flush)
    upload(200)
    assert counts == {"compiled": 0, "flushes": 0}


def test_an_uploaded_file_is_never_spooled_to_disk(app: Flask, release_gold: GoldSet,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A file part over Werkzeug's 500 KB spooling size stays in memory (AppRequest)."""
    def no_temporary_file(*_: Any, **__: Any) -> Any:
        raise AssertionError("a temporary file was created for the upload")

    monkeypatch.setattr(tempfile, "SpooledTemporaryFile", no_temporary_file)
    monkeypatch.setattr(tempfile, "TemporaryFile", no_temporary_file)
    client = app.test_client()
    register(client, "alice")
    gold = release_gold.get("temp", "test")
    data = prediction_file(gold, 300)
    padded = data.replace(b"\n", b" " * 200 + b"\n")  # JSON white space: the same records
    assert len(padded) > 600_000
    response = client.post("/api/v1/submissions", headers={
        "Authorization": f"Bearer {new_token(client)}"}, data={
        "track": "temp", "split": "test", "method_name": "big",
        "file": (io.BytesIO(padded), "p.jsonl")})
    assert response.status_code == 201, response.get_json()
    assert response.get_json()["counts"]["em"] == len(gold)


@settings(max_examples=200, deadline=None)
@given(chunks=st.lists(st.binary(max_size=300), max_size=6),
       reads=st.lists(st.one_of(st.none(), st.integers(-2, 400)), max_size=4),
       start=st.integers(0, 50))
def test_an_in_memory_part_reads_like_bytesio(chunks: list[bytes], reads: list[int | None],
                                              start: int) -> None:
    """InMemoryPart's no-copy read gives BytesIO's bytes and positions for any reads."""
    part, plain = InMemoryPart(), io.BytesIO()
    for chunk in chunks:
        part.write(chunk)
        plain.write(chunk)
    for stream in (part, plain):
        stream.seek(0)
    assert part.read() == plain.read() and part.tell() == plain.tell()
    for stream in (part, plain):
        stream.seek(min(start, len(b"".join(chunks))))
    for size in reads:
        assert part.read(size) == plain.read(size) and part.tell() == plain.tell()


class TrickleInput:
    """A WSGI input (read only, as gunicorn's) handing out at most `step` bytes a read, as a
    socket may; counts the reads."""

    def __init__(self, data: bytes, step: int) -> None:
        self.data, self.step, self.position, self.reads = data, step, 0, 0

    def read(self, size: int | None = -1) -> bytes:
        self.reads += 1
        wanted = len(self.data) if size is None or size < 0 else size
        chunk = self.data[self.position:self.position + min(wanted, self.step)]
        self.position += len(chunk)
        return chunk


def form_environ(fields: dict[str, str], file: bytes) -> dict[str, Any]:
    """The WSGI environ of a multipart POST of these fields and one file."""
    from werkzeug.test import EnvironBuilder

    builder = EnvironBuilder(method="POST", data={**fields, "file": (io.BytesIO(file),
                                                                    "p.jsonl")})
    try:
        return builder.get_environ()
    finally:
        builder.close()


@settings(max_examples=60, deadline=None)
@given(file=st.binary(max_size=3000), step=st.integers(1, 5000),
       method=st.text(st.characters(codec="utf-8", exclude_characters="\r"), max_size=40))
def test_a_form_body_read_whole_parses_as_werkzeug_does(file: bytes, step: int,
                                                         method: str) -> None:
    """Whatever the input hands out per read, AppRequest's form and file equal Werkzeug's."""
    from flask import Request

    from situatedqa_server.wrappers import AppRequest

    environ = form_environ({"method_name": method, "track": "temp"}, file)
    body = environ["wsgi.input"].read()
    ours = AppRequest({**environ, "wsgi.input": TrickleInput(body, step)})
    theirs = Request({**environ, "wsgi.input": io.BytesIO(body)})
    assert ours.form.to_dict(flat=False) == theirs.form.to_dict(flat=False)
    assert ours.files["file"].read() == theirs.files["file"].read() == file


def test_a_form_body_is_read_in_one_call() -> None:
    """An input that hands out all it is asked for is read once, for the whole body."""
    from situatedqa_server.wrappers import AppRequest

    environ = form_environ({"track": "temp"}, b"x" * 300_000)
    stream = TrickleInput(environ["wsgi.input"].read(), 10**9)
    request = AppRequest({**environ, "wsgi.input": stream})
    assert len(request.files["file"].read()) == 300_000
    assert stream.reads == 1


def test_a_body_shorter_than_its_length_is_a_client_disconnect() -> None:
    from werkzeug.exceptions import ClientDisconnected

    from situatedqa_server.wrappers import AppRequest

    environ = form_environ({"track": "temp"}, b"x" * 5000)
    body = environ["wsgi.input"].read()
    request = AppRequest({**environ, "wsgi.input": TrickleInput(body[:-100], 700)})
    with pytest.raises(ClientDisconnected):
        _ = request.form


def test_a_body_over_the_cap_is_refused_before_any_read() -> None:
    from werkzeug.exceptions import RequestEntityTooLarge

    from situatedqa_server.wrappers import AppRequest

    environ = form_environ({"track": "temp"}, b"x" * 5000)
    stream = TrickleInput(environ["wsgi.input"].read(), 10**9)
    request = AppRequest({**environ, "wsgi.input": stream})
    request.max_content_length = 4000
    with pytest.raises(RequestEntityTooLarge):
        _ = request.form
    assert stream.reads == 0


# --- stored files: ISA-L writes zlib streams ------------------------------------------------


@settings(max_examples=50, deadline=None)
@given(data=st.binary(max_size=5000), level=st.sampled_from([1, 6]))
def test_stored_files_are_zlib_streams(data: bytes, level: int) -> None:
    """Either library reads what the other wrote, so rows stored before ISA-L stay readable."""
    assert zlib.decompress(blobs.compress(data, level)) == data
    assert blobs.decompress(zlib.compress(data, level)) == data


def test_a_damaged_stored_file_raises_zlib_error() -> None:
    with pytest.raises(zlib.error):
        blobs.decompress(zlib.compress(b"some predictions")[:-3] + b"\x00\x01\x02")


# --- migrations without Alembic in the web workers -----------------------------------------


def test_the_web_app_does_not_import_alembic(tmp_path: Path) -> None:
    """Alembic and Mako are imported by a migration, not by building the app (~11 MiB)."""
    code = ("import sys\nfrom situatedqa_server import create_app\n"
            f"app = create_app({{'INSTANCE_DIR': {str(tmp_path)!r}, 'SECRET_KEY': 'k'}})\n"
            "print(sorted(m for m in ('alembic', 'flask_migrate', 'mako') if m in sys.modules))\n"
            "app.extensions['migrate'].migrate\n"
            "print(sorted(m for m in ('alembic', 'flask_migrate') if m in sys.modules))\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True, cwd=tmp_path)
    assert result.stdout.split("\n")[:2] == ["[]", "['alembic', 'flask_migrate']"]


def test_flask_db_runs_flask_migrate(runner: FlaskCliRunner) -> None:
    """`flask db …` parses its options and runs Flask-Migrate's commands, imported then."""
    # Alembic prints to the sys.stdout of its import, not the runner's: exit codes say it.
    assert runner.invoke(args=["db", "heads"]).exit_code == 0
    # -x is an option of Flask-Migrate's group only: an unknown option would exit with 2.
    current = runner.invoke(args=["db", "-x", "unused=1", "current"])
    assert current.exit_code == 0, current.output
    assert runner.invoke(args=["db", "--bogus", "current"]).exit_code == 2
    assert "Perform database migrations." in runner.invoke(args=["--help"]).output
    listing = runner.invoke(args=["db", "--help"]).output
    assert "upgrade" in listing and "downgrade" in listing
    group = runner.app.cli.commands["db"]
    assert isinstance(group, click.Group)
    assert {"upgrade", "downgrade", "current"} <= set(group.list_commands(click.Context(group)))
