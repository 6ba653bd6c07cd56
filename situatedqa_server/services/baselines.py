"""Baseline entries and the paper's numbers: run or read, score, replace in one transaction.

Regeneration has three phases. The runners run (or their files are read) into memory and
every file is scored against every gold version; nothing touches the database yet, so a
runner that fails leaves the previous entries as they were. Then one locked transaction
keeps each entry whose file and settings are unchanged (same id), replaces the others
(old rows and their scores removed, new ones inserted with a score per gold version) and
brings the paper-reported rows up to date; the files are stored (content-addressed, in the
database) in that same transaction.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import json
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flask import current_app
from sqlalchemy import delete, select, text

from baselines import runners as runner_registry
from baselines.commands import THREAD_VARIABLES
from baselines.output import meta_path
from baselines.reported import ReportedEntry as PaperEntry
from baselines.reported import load_reported
from benchmark import (
    ID_TRACKS,
    SPLITS,
    TRACK_INFO,
    TRACKS,
    GoldSplit,
    Predictions,
    ScoreResult,
    ValidationError,
)
from benchmark.incremental import encode_predictions
from benchmark.public_paths import public_value

from ..extensions import db
from ..models import (
    GoldVersion,
    ModelType,
    ReportedEntry,
    Score,
    Submission,
    Team,
    User,
    Visibility,
    utcnow,
)
from . import audit, blobs, duplicates, evaluation, gold_store, quotas, versions
from .errors import ServiceError

#: The reference submissions: the quick runners' outputs, committed compressed with sidecars.
REFERENCE_DIR = Path(__file__).resolve().parents[2] / "submissions" / "reference"
#: What a regeneration job started from the admin pages does ("files": an uploaded run).
JOB_MODES = {"reference": "load the committed reference files (seconds)",
             "quick": "rerun id-random, id-tfidf and nn-train on the release (needs "
                      "SITUATEDQA_DATA; nn-train embeds the questions with MiniLM: minutes)"}
UPLOAD_MODE = "files"
SYSTEM_USERNAME = "situatedqa-organizers"
SYSTEM_EMAIL = "organizers@situatedqa.invalid"
SYSTEM_TEAM = "SituatedQA organizers"
#: Not an argon2 hash: verification always fails, so nobody can log in as the system user.
UNUSABLE_PASSWORD = "!"
DEFAULT_SPLITS = ("dev", "test")
#: CPU-only, seconds to minutes per run: what a plain regenerate and the quick start run.
QUICK_RUNNERS = ("id-random", "id-tfidf", "nn-train")
#: Options a runner gets when the server runs it: nn-train looks up the training question
#: with its context (the query-modified setting).
RUNNER_ARGS: dict[str, tuple[str, ...]] = {"nn-train": ("--setting", "query-modified")}
#: Trains a transformer for minutes per track: only with --with-minilm.
SLOW_RUNNERS = ("id-minilm",)
#: Reported rows whose source starts so are managed by sync_reported (others are left alone).
REPORTED_PREFIX = "SituatedQA paper, "
REPORTED_MODEL_TYPES = {"retrieval-based": ModelType.RETRIEVAL.value,
                        "closed-book": ModelType.CLOSED_BOOK.value,
                        "other": ModelType.OTHER.value}
#: Serialises regenerations on PostgreSQL (SQLite's write lock already does).
REGENERATION_LOCK_KEY = 0x5174_0007
#: Paper settings that add nothing to a method's name or source.
PLAIN_SETTINGS = frozenset({"question only", "human"})


class BaselineError(ServiceError):
    """A baseline cannot be used: a missing or mismatched file, a failed run, a rejected file."""

    status = 400
    code = "invalid_baseline"


#: The runners, declared once in baselines/runners.py (the CLI's choices come from there).
RUNNERS = runner_registry.RUNNERS


# --- what to regenerate ----------------------------------------------------------------------


@dataclass(frozen=True, order=True)
class BaselineKey:
    """One baseline entry: a runner's predictions on a track and split."""

    runner: str
    track: str
    split: str

    def __str__(self) -> str:
        return f"{self.runner}:{self.track}:{self.split}"

    @property
    def filename(self) -> str:
        """The name the entry's file is stored and shown under."""
        return f"{self.runner}.{self.track}.{self.split}.jsonl"


def baseline_key(runner: str, track: str, split: str) -> BaselineKey:
    """A validated key (BaselineError names what is unknown or mismatched)."""
    if runner not in RUNNERS:
        raise BaselineError(f"unknown runner {runner!r}; choose one of {', '.join(RUNNERS)}")
    if track not in RUNNERS[runner].tracks:
        raise BaselineError(f"runner {runner} does not answer track {track!r}; its tracks: "
                            f"{', '.join(RUNNERS[runner].tracks)}")
    if split not in SPLITS:
        raise BaselineError(f"unknown split {split!r}; choose one of {', '.join(SPLITS)}")
    return BaselineKey(runner, track, split)


def parse_spec(spec: str) -> tuple[BaselineKey, Path]:
    """RUNNER:TRACK:SPLIT:PATH (the path may itself contain colons)."""
    parts = spec.split(":", 3)
    if len(parts) != 4 or not parts[3]:
        raise BaselineError(f"{spec!r}: expected RUNNER:TRACK:SPLIT:PATH")
    return baseline_key(*parts[:3]), Path(parts[3])


def plan(runners: Iterable[str], tracks: Iterable[str] = ID_TRACKS,
         splits: Iterable[str] = DEFAULT_SPLITS) -> list[BaselineKey]:
    """Every (runner, track, split) to run, skipping tracks a runner does not answer."""
    tracks, splits = tuple(tracks), tuple(splits)
    return [baseline_key(runner, track, split) for runner in runners
            for track in tracks if track in RUNNERS[runner].tracks for split in splits]


def default_plan(runners: Sequence[str] = (), tracks: Sequence[str] = (),
                 splits: Sequence[str] = (), *, with_minilm: bool = False) -> list[BaselineKey]:
    """What regenerate runs: the quick runners (plus id-minilm) unless runners are named."""
    chosen = tuple(runners) or QUICK_RUNNERS + (SLOW_RUNNERS if with_minilm else ())
    return plan(chosen, tuple(tracks) or TRACKS, tuple(splits) or DEFAULT_SPLITS)


# --- files -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BaselineFile:
    """A runner's prediction file and its .meta.json sidecar, read into memory."""

    key: BaselineKey
    data: bytes
    meta: dict[str, Any]

    @property
    def sha256(self) -> str:
        """The content address of the file."""
        return hashlib.sha256(self.data).hexdigest()

    @property
    def record(self) -> dict[str, Any]:
        """What the entry records: settings, seed, fingerprints, code version, training; a
        path an older runner's sidecar holds is kept by its last component (it is shown)."""
        recorded: dict[str, Any] = public_value({
            "setting": self.meta.get("setting"), "settings": self.meta.get("settings", {}),
            "seed": self.meta.get("seed"), "fingerprints": self.meta.get("fingerprints", {}),
            "code_version": self.meta.get("code_version"),
            "training": self.meta.get("training")})
        return recorded


def run_identity(record: dict[str, Any]) -> dict[str, Any]:
    """The part of a recorded run that decides whether an entry is unchanged."""
    return {name: record.get(name) for name in ("setting", "settings", "seed")}


def read_sidecar(path: Path) -> dict[str, Any]:
    """The .meta.json sidecar of a prediction file (BaselineError names it when unusable)."""
    sidecar = meta_path(path)
    if not sidecar.is_file():
        raise BaselineError(f"{sidecar}: not found; an entry records the runner, its settings "
                            "and fingerprints from the sidecar the runner writes")
    try:
        meta = json.loads(sidecar.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BaselineError(f"{sidecar}: not readable JSON ({exc})") from None
    if not isinstance(meta, dict):
        raise BaselineError(f"{sidecar}: not a JSON object")
    return meta


def read_file(key: BaselineKey, path: Path) -> BaselineFile:
    """A prediction file and its sidecar, which must name the same runner, track and split."""
    if not path.is_file():
        raise BaselineError(f"{path}: no such file (for {key})")
    meta = read_sidecar(path)
    found = tuple(str(meta.get(name)) for name in ("runner", "track", "split"))
    if found != (key.runner, key.track, key.split):
        raise BaselineError(f"{meta_path(path)}: written by {':'.join(found)}, not {key}")
    data = path.read_bytes()
    if path.suffix == ".gz":  # reference files are committed compressed; entries keep the JSONL
        data = gzip.decompress(data)
    return BaselineFile(key, data, meta)


def discover(directory: Path) -> list[tuple[BaselineKey, Path]]:
    """Every *.jsonl of a folder, keyed by its sidecar's runner, track and split."""
    if not directory.is_dir():
        raise BaselineError(f"{directory}: no such folder")
    found = [(_sidecar_key(path), path) for path in sorted(
        [*directory.glob("*.jsonl"), *directory.glob("*.jsonl.gz")])]
    if not found:
        raise BaselineError(f"{directory}: no *.jsonl prediction files")
    keys = [key for key, _ in found]
    duplicates = sorted({str(key) for key in keys if keys.count(key) > 1})
    if duplicates:
        raise BaselineError(f"{directory}: several files for {', '.join(duplicates)}")
    return found


def _sidecar_key(path: Path) -> BaselineKey:
    meta = read_sidecar(path)
    try:
        return baseline_key(str(meta.get("runner")), str(meta.get("track")),
                            str(meta.get("split")))
    except BaselineError as exc:
        raise BaselineError(f"{meta_path(path)}: {exc}") from None


@contextlib.contextmanager
def blas_threads(threads: int) -> Iterator[None]:
    """Limit BLAS/OpenMP threads while a runner runs.

    On the shared cores, oversubscribed BLAS threads make one temp-id TF-IDF fit take 80 s
    instead of 10 s. threadpoolctl comes with scikit-learn; without it nothing is limited.
    """
    saved = {name: os.environ.get(name) for name in THREAD_VARIABLES}
    try:
        try:
            from threadpoolctl import threadpool_limits  # type: ignore[import-untyped]
        except ImportError:
            yield
            return
        with threadpool_limits(limits=threads):
            yield
    finally:  # the runner sets them for its libraries; this process keeps its own
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def run_runner(key: BaselineKey, data_dir: Path, work_dir: Path, *, seed: int = 0,
               threads: int = 1) -> BaselineFile:
    """Run one runner in this process, as `python -m baselines run` would, and read its file."""
    import click

    # Imported here: the server starts without loading the runner stack.
    from baselines.cli import run as run_command

    output = work_dir / key.filename
    args = [key.runner, "--track", key.track, "--split", key.split, "--data", str(data_dir),
            "--output", str(output), "--seed", str(seed), "--threads", str(threads),
            *RUNNER_ARGS.get(key.runner, ())]
    try:
        # The runner's "wrote N records to <scratch folder>" would name a folder about to go.
        with blas_threads(threads), contextlib.redirect_stdout(io.StringIO()):
            run_command.main(args=args, prog_name="baselines run", standalone_mode=False)
    except click.ClickException as exc:
        raise BaselineError(f"{key}: {exc.format_message()}") from None
    except ImportError as exc:
        raise BaselineError(f"{key}: the runner needs {exc.name or exc}; install the "
                            "'classic' extra (or 'baselines' for id-minilm)") from None
    return read_file(key, output)


# --- scoring -----------------------------------------------------------------------------------


@dataclass
class ScoredFile:
    """A baseline file validated by the scorer, with its result per gold version."""

    file: BaselineFile
    predicted: evaluation.Predicted
    results: dict[int, ScoreResult] = field(default_factory=dict)

    @property
    def predictions(self) -> Predictions:
        """The file's predictions, as read against the inputs it answers."""
        return self.predicted.predictions

    @property
    def inputs(self) -> GoldSplit:
        """The inputs the file answers (a version's, maybe not the active one's)."""
        return self.predicted.inputs

    def result_for(self, version: GoldVersion) -> ScoreResult:
        """The file's result against a version (scored now if the version is new)."""
        if version.id not in self.results:
            result = evaluation.score_into(version, [self.predicted]).results[0]
            if result is None:  # predictions in hand always get a result
                raise BaselineError(f"{self.file.key}: not scored against {version.name}")
            self.results[version.id] = result
        return self.results[version.id]


def score_file(file: BaselineFile, targets: Sequence[GoldVersion]) -> ScoredFile:
    """Validate a file as an upload would be, and score it against every target version.

    It is read like a stored submission: against the inputs the run answered, the active
    version's first, then any other version's (a reference file made on the release keeps
    loading after a version retires or adds examples); each target then aligns it.
    """
    key = file.key
    try:
        predicted = evaluation.read_file(file.data, key.track, key.split, key.filename,
                                         gold_store.active_version().id)
    except ValidationError as exc:
        raise BaselineError(f"{key}: the scorer rejects the file: {exc}") from None
    scored = ScoredFile(file, predicted)
    for version in targets:
        scored.result_for(version)
    return scored


def targets_active_first() -> list[GoldVersion]:
    """Every gold version, the active one first.

    The first score of a submission tells later rescoring which inputs its file was read
    against (versions.stored_files), and the file was read against the active version's.
    """
    active = gold_store.active_version()
    return [active, *(v for v in versions.all_versions() if v.id != active.id)]


# --- the paper's numbers -----------------------------------------------------------------------


@dataclass(frozen=True)
class ReportedRow:
    """A paper number as the leaderboard stores it."""

    track: str
    split: str
    method_name: str
    source: str
    model_type: str
    fine_tuned: bool
    metrics: dict[str, float]

    @property
    def key(self) -> tuple[str, str, str]:
        """What identifies a row across refreshes."""
        return self.track, self.split, self.source

    @property
    def primary_metric(self) -> float | None:
        """The track's primary metric (None for present: Table 9 reports no total EM)."""
        return self.metrics.get(TRACK_INFO[self.track].primary)


def reported_method(entry: PaperEntry) -> str:
    """A leaderboard name: the method and its setting, or Human (estimate)."""
    if entry.human:
        return "Human (estimate)"
    if entry.source.setting in PLAIN_SETTINGS:
        return entry.method
    return f"{entry.method} ({entry.source.setting})"


def reported_source(entry: PaperEntry) -> str:
    """Where the number is in the paper; unique per track and split."""
    setting = "" if entry.source.setting in PLAIN_SETTINGS else f", {entry.source.setting}"
    human = " (human performance, estimated by the authors)" if entry.human else ""
    return (f"{REPORTED_PREFIX}Table {entry.source.table}: {entry.source.row}{setting}{human}")


def reported_row(entry: PaperEntry) -> ReportedRow:
    """The leaderboard row of one paper entry."""
    return ReportedRow(entry.track, entry.split, reported_method(entry),
                       reported_source(entry), REPORTED_MODEL_TYPES[entry.model_type],
                       entry.fine_tuned, dict(entry.metrics))


def reported_rows(entries: Iterable[PaperEntry] | None = None) -> list[ReportedRow]:
    """Rows for the paper's tables (default: baselines/data/paper_reported.json)."""
    rows = [reported_row(entry) for entry in (load_reported() if entries is None else entries)]
    keys = [row.key for row in rows]
    if len(keys) != len(set(keys)):
        raise BaselineError("paper_reported.json: two entries share a track, split and source")
    return rows


@dataclass(frozen=True)
class ReportedSync:
    """How many paper rows a refresh added, updated, removed and left as they were."""

    added: int = 0
    updated: int = 0
    removed: int = 0
    unchanged: int = 0

    @property
    def changed(self) -> bool:
        """Whether the refresh wrote anything."""
        return bool(self.added or self.updated or self.removed)


def _reported_fields(row: ReportedRow) -> dict[str, Any]:
    return {"method_name": row.method_name, "model_type": row.model_type,
            "fine_tuned": row.fine_tuned, "metrics": row.metrics,
            "primary_metric": row.primary_metric,
            "paper_url": runner_registry.SITUATEDQA_PAPER_URL}


def sync_reported(rows: Sequence[ReportedRow]) -> ReportedSync:
    """Make the managed paper rows equal to rows, keeping ids of unchanged ones (not committed)."""
    existing = {(e.track, e.split, e.source): e for e in db.session.scalars(
        select(ReportedEntry).where(ReportedEntry.source.startswith(REPORTED_PREFIX)))}
    added = updated = unchanged = 0
    for row in rows:
        wanted = _reported_fields(row)
        entry = existing.pop(row.key, None)
        if entry is None:
            db.session.add(ReportedEntry(track=row.track, split=row.split, source=row.source,
                                         **wanted))
            added += 1
        elif any(getattr(entry, name) != value for name, value in wanted.items()):
            for name, value in wanted.items():
                setattr(entry, name, value)
            updated += 1
        else:
            unchanged += 1
    for entry in existing.values():
        db.session.delete(entry)
    return ReportedSync(added, updated, len(existing), unchanged)


# --- replacing entries -------------------------------------------------------------------------


@dataclass(frozen=True)
class EntryChange:
    """What regeneration did to one baseline entry."""

    key: BaselineKey
    action: str  # "kept", "replaced" or "added"
    submission_id: int
    removed_ids: tuple[int, ...] = ()


@dataclass(frozen=True)
class RegenerationReport:
    """Every entry's fate and the paper rows' refresh."""

    entries: tuple[EntryChange, ...]
    reported: ReportedSync | None

    @property
    def changed(self) -> bool:
        """Whether anything was written."""
        return any(e.action != "kept" for e in self.entries) or bool(
            self.reported and self.reported.changed)


def system_user() -> User:
    """The account that owns the baselines (created on first use, never able to log in)."""
    user = db.session.scalar(select(User).where(User.username == SYSTEM_USERNAME))
    if user is not None:
        return user
    if db.session.scalar(select(Team.id).where(Team.name == SYSTEM_TEAM)) is not None:
        # Joining it would let that team's members delete the baselines as their own.
        raise BaselineError(f"a team named {SYSTEM_TEAM!r} exists without the system user "
                            f"{SYSTEM_USERNAME!r}; rename that team first")
    user = User(username=SYSTEM_USERNAME, email=SYSTEM_EMAIL, password_hash=UNUSABLE_PASSWORD,
                team=Team(name=SYSTEM_TEAM), is_admin=False)
    db.session.add(user)
    db.session.flush()
    return user


def current_entries(key: BaselineKey) -> list[Submission]:
    """The baseline submissions a regeneration of key replaces, oldest first."""
    return list(db.session.scalars(select(Submission).where(
        Submission.is_baseline.is_(True), Submission.baseline_runner == key.runner,
        Submission.track == key.track, Submission.split == key.split,
        Submission.deleted_at.is_(None)).order_by(Submission.id)))


def is_unchanged(current: Sequence[Submission], file: BaselineFile) -> bool:
    """One current entry with the same file and the same run settings."""
    return (len(current) == 1 and current[0].file_sha256 == file.sha256
            and run_identity(current[0].baseline_settings or {}) == run_identity(file.record))


def method_name(file: BaselineFile) -> str:
    """The leaderboard name, from the run's recorded settings: QA runners add their query
    setting, nn-train its embedder, DPR a corpus smaller than the paper's."""
    tags = runner_registry.method_tags(file.key.runner, file.meta)
    base = RUNNERS[file.key.runner].method_name
    return f"{base} ({', '.join(tags)})" if tags else base


def differences(file: BaselineFile) -> list[str]:
    """How the run differs from the setup its entry stands for (empty: it matches)."""
    return runner_registry.setup_differences(file.key.runner, file.meta)


def description(file: BaselineFile) -> str:
    """The entry's description, generated from the run's sidecar."""
    runner = RUNNERS[file.key.runner]
    facts = "; ".join(runner_registry.run_facts(file.key.runner, file.meta))
    text = f"{runner.summary} Run: {facts}. Regenerated by the organizers from runner " \
           f"{file.key.runner}."
    found = differences(file)
    if found:
        text += f" Differs from {runner.setup}: {'; '.join(found)}."
    return text


def check_confirmed(files: Sequence[BaselineFile], confirmed_by: str | None) -> None:
    """Refuse to publish runs that differ from their setup unless an organizer confirmed."""
    differing = [(file, found) for file in files if (found := differences(file))]
    if differing and confirmed_by is None:
        lines = "; ".join(f"{file.key} differs from {RUNNERS[file.key.runner].setup}: "
                          f"{', '.join(found)}" for file, found in differing)
        raise BaselineError(f"{lines}. Nothing was published: an organizer must confirm "
                            "publishing such runs, each with a visible note of how it differs "
                            "(--confirm-differences, or the confirmation box on /admin/jobs)")


def entry_record(file: BaselineFile, confirmed_by: str | None) -> dict[str, Any]:
    """What the entry records: the run's settings, and how it differs and who confirmed."""
    found = differences(file)
    record = {**file.record, "differences": found}
    if found:
        record["setup"] = RUNNERS[file.key.runner].setup
        record["confirmed_by"] = confirmed_by
    return record


def is_fine_tuned(file: BaselineFile) -> bool:
    """MiniLM is fine-tuned; DPR/BART only in the finetuned setting."""
    return file.key.runner == "id-minilm" or file.meta.get("setting") == "finetuned"


def new_submission(scored: ScoredFile, owner: User, hidden_from: Submission | None,
                   confirmed_by: str | None = None) -> Submission:
    """A public baseline submission of the system user (an organizer's hide carries over)."""
    file, now = scored.file, utcnow()
    info = RUNNERS[file.key.runner]
    return Submission(
        user_id=owner.id, team_id=owner.team_id, track=file.key.track, split=file.key.split,
        file_sha256=file.sha256, filename=file.key.filename, format=scored.predictions.format,
        method_name=method_name(file), description=description(file),
        paper_url=info.paper_url, model_type=info.model_type, fine_tuned=is_fine_tuned(file),
        visibility=Visibility.PUBLIC.value, published_at=now, created_at=now,
        hidden=bool(hidden_from and hidden_from.hidden),
        hidden_reason=hidden_from.hidden_reason if hidden_from else None,
        is_baseline=True, baseline_runner=file.key.runner,
        baseline_settings=entry_record(file, confirmed_by),
        # A researcher's upload of the same predictions is then marked as its duplicate.
        predictions_sha256=duplicates.digest(scored.predictions),
        predictions=encode_predictions(scored.predictions, scored.inputs))


def _add_scores(submission: Submission, scored: ScoredFile, targets: Sequence[GoldVersion],
                have: set[int] | None = None) -> None:
    """Scores against the targets the submission lacks, in target order."""
    for version in targets:
        if version.id not in (have or set()):
            db.session.add(evaluation.score_row(submission, version,
                                                scored.result_for(version)))


def _remove(submissions: Sequence[Submission]) -> tuple[int, ...]:
    """Delete replaced baselines and their scores.

    Removed rather than soft-deleted: they count against no quota, can be regenerated,
    and a soft-deleted row would still be rescored by every later gold version.
    """
    ids = tuple(s.id for s in submissions)
    if ids:
        db.session.execute(delete(Score).where(Score.submission_id.in_(ids)))
        db.session.execute(delete(Submission).where(Submission.id.in_(ids)))
    return ids


def replace_entry(scored: ScoredFile, owner: User, targets: Sequence[GoldVersion],
                  confirmed_by: str | None = None) -> EntryChange:
    """Keep an unchanged entry (adding missing scores), else replace it (not committed)."""
    key, current = scored.file.key, current_entries(scored.file.key)
    if is_unchanged(current, scored.file):
        entry = current[0]
        _add_scores(entry, scored, targets, {s.gold_version_id for s in entry.scores})
        # Same file and settings, yet the sidecar may record them anew (fingerprints by
        # file name, where older sidecars kept the path they were read from): kept in step.
        earlier = (entry.baseline_settings or {}).get("confirmed_by")
        record = entry_record(scored.file, earlier or confirmed_by)
        if entry.baseline_settings != record:
            entry.baseline_settings = record
        entry.paper_url = RUNNERS[key.runner].paper_url  # what describes the method
        entry.predictions_sha256 = duplicates.digest(scored.predictions)
        return EntryChange(key, "kept", entry.id)
    submission = new_submission(scored, owner, current[-1] if current else None, confirmed_by)
    removed = _remove(current)
    db.session.add(submission)
    db.session.flush()
    _add_scores(submission, scored, targets)
    action = "replaced" if removed else "added"
    audit.record(f"baseline_{action}", submission, None,
                 f"{key} {scored.file.sha256[:12]}"
                 + (f" replaces {', '.join(map(str, removed))}" if removed else ""))
    return EntryChange(key, action, submission.id, removed)


def replace_all(scored: Sequence[ScoredFile], reported: Sequence[ReportedRow] | None,
                confirmed_by: str | None = None) -> RegenerationReport:
    """One transaction: files stored, every entry kept or replaced, paper rows refreshed."""
    try:
        return _replace_locked(scored, reported, confirmed_by)
    except BaseException:
        db.session.rollback()
        raise


def lock_regeneration() -> None:
    """PostgreSQL: one regeneration at a time, or two could both insert the same key."""
    if db.session.get_bind().dialect.name == "postgresql":
        db.session.execute(text("SELECT pg_advisory_xact_lock(:key)"),
                           {"key": REGENERATION_LOCK_KEY})


def _replace_locked(scored: Sequence[ScoredFile], reported: Sequence[ReportedRow] | None,
                    confirmed_by: str | None) -> RegenerationReport:
    """The transaction of replace_all, under the upload lock."""
    quotas.begin_locked()  # SQLite: uploads and version switches wait for the commit
    evaluation.lock_versions(shared=True)
    lock_regeneration()
    targets = targets_active_first()
    owner = system_user()
    for data in {s.file.sha256: s.file.data for s in scored}.values():
        blobs.put(data)
    changes = tuple(replace_entry(item, owner, targets, confirmed_by) for item in scored)
    synced = sync_reported(reported) if reported is not None else None
    db.session.commit()
    return RegenerationReport(changes, synced)


# --- the whole command ---------------------------------------------------------------------


def require_release(data_dir: Path | None) -> Path:
    """The release folder the runners read (BaselineError names it when absent)."""
    if data_dir is None or not data_dir.is_dir():
        raise BaselineError(f"release folder not found: {data_dir} (set SITUATEDQA_DATA "
                            "or pass --data)")
    return data_dir


def run_all(runs: Sequence[BaselineKey], data_dir: Path, *, seed: int, threads: int,
            progress: Callable[[str], None]) -> list[BaselineFile]:
    """Run every key in a scratch folder (runners resume existing outputs: start empty)."""
    with tempfile.TemporaryDirectory(prefix="sqa-baselines-") as work:
        files = []
        for key in runs:
            progress(f"running {key}")
            files.append(run_runner(key, data_dir, Path(work), seed=seed, threads=threads))
        return files


def regenerate(runs: Sequence[BaselineKey], files: Sequence[tuple[BaselineKey, Path]], *,
               data_dir: Path | None, seed: int = 0, threads: int = 1, reported: bool = True,
               progress: Callable[[str], None] = lambda _: None,
               loaded: Sequence[BaselineFile] = (),
               confirmed_by: str | None = None) -> RegenerationReport:
    """Run and read every baseline, score each against every gold version, then replace.

    LOADED are files already in memory (an upload from the admin pages). A run that differs
    from its setup is published only when CONFIRMED_BY names the organizer who confirmed it
    (BaselineError otherwise, before anything is written).
    """
    ready = [*loaded, *(read_file(key, path) for key, path in files)]
    if runs:
        ready += run_all(runs, require_release(data_dir), seed=seed, threads=threads,
                         progress=progress)
    check_confirmed(ready, confirmed_by)
    targets = targets_active_first()
    scored = []
    for file in ready:
        progress(f"scoring {file.key} against {len(targets)} gold version(s)")
        scored.append(score_file(file, targets))
    progress(f"replacing {len(scored)} entries in one transaction")
    return replace_all(scored, reported_rows() if reported else None, confirmed_by)


# --- jobs from the admin pages -------------------------------------------------------------


def uploaded_file(data: bytes, filename: str, sidecar: bytes, sidecar_name: str,
                  ) -> BaselineFile:
    """A runner output uploaded with the .meta.json sidecar its runner wrote.

    The sidecar names the runner, track and split and carries the run's fingerprints (model
    and data sha256, code version), which the entry records and its page shows.
    """
    try:
        meta = json.loads(sidecar.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BaselineError(f"{sidecar_name}: not readable JSON ({exc})") from None
    if not isinstance(meta, dict):
        raise BaselineError(f"{sidecar_name}: not a JSON object")
    try:
        key = baseline_key(str(meta.get("runner")), str(meta.get("track")),
                           str(meta.get("split")))
    except BaselineError as exc:
        raise BaselineError(f"{sidecar_name}: {exc}") from None
    if not isinstance(meta.get("fingerprints"), dict) or not meta["fingerprints"]:
        raise BaselineError(f"{sidecar_name}: key 'fingerprints' is missing or empty; upload "
                            "the .meta.json the runner wrote next to its output")
    if filename.endswith(".gz"):
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as exc:
            raise BaselineError(f"{filename}: not a gzip file ({exc})") from None
    file = BaselineFile(key, data, meta)
    try:  # checked now, so the organizer learns at once, not from a failed job
        evaluation.read_file(data, key.track, key.split, filename,
                             gold_store.active_version().id)
    except ValidationError as exc:
        raise BaselineError(f"{key}: the scorer rejects the file: {exc}") from None
    return file


def upload_params(file: BaselineFile) -> dict[str, Any]:
    """Job parameters of an uploaded run: the file stored by content (not committed)."""
    return {"mode": UPLOAD_MODE, "files": [
        {"key": str(file.key), "sha256": blobs.put(file.data), "meta": file.meta}]}


def job_steps(params: dict[str, Any]) -> int:
    """How many progress lines a regeneration job reports (its progress bar's length)."""
    mode = params.get("mode", "reference")
    if mode == "quick":
        files = len(default_plan())
        return 2 * files + 1  # run, score, then the one replacing transaction
    if mode == UPLOAD_MODE:
        return len(params.get("files", ())) + 1
    return len(discover(REFERENCE_DIR)) + 1 if REFERENCE_DIR.is_dir() else 1


def stored_uploads(params: dict[str, Any]) -> list[BaselineFile]:
    """The uploaded files a job's parameters name, read back from the database."""
    files = []
    for spec in params.get("files", ()):
        runner, track, split = str(spec["key"]).split(":")
        files.append(BaselineFile(baseline_key(runner, track, split), blobs.get(spec["sha256"]),
                                  dict(spec["meta"])))
    return files


def run_job_params(params: dict[str, Any], progress: Callable[[str], None]) -> None:
    """Regenerate as a job's parameters say (mode: reference, quick or an uploaded file)."""
    mode = params.get("mode", "reference")
    confirmed_by = params.get("confirmed_by")
    if mode == UPLOAD_MODE:
        # one uploaded run: only its entry changes, the paper rows are left as they are
        regenerate([], [], data_dir=None, reported=False, progress=progress,
                   loaded=stored_uploads(params), confirmed_by=confirmed_by)
        return
    if mode not in JOB_MODES:
        raise BaselineError(f"unknown regeneration mode {mode!r}")
    configured = current_app.config.get("SITUATEDQA_DATA")
    data_dir = Path(configured) if configured else None
    runs = default_plan() if mode == "quick" else []
    files = discover(REFERENCE_DIR) if mode == "reference" else []
    regenerate(runs, files, data_dir=data_dir if runs else None,
               seed=int(params.get("seed", 0)), progress=progress, confirmed_by=confirmed_by)
