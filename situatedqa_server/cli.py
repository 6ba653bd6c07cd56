"""Organizer commands: `flask --app app gold|users|tokens|submissions|reported|setup …`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from flask import Flask, current_app
from flask.cli import AppGroup, with_appcontext
from sqlalchemy import select
from tqdm import tqdm

from benchmark import SPLITS, TRACK_INFO, TRACKS, GoldError, ValidationError
from benchmark.release import DEFAULT_DOWNLOAD_DIR
from benchmark.versions import Change

from . import tasks
from .extensions import db
from .models import (
    ApiToken,
    GoldVersion,
    Job,
    JobStatus,
    ModelType,
    ReportedEntry,
    Submission,
    User,
)
from .services import (
    accounts,
    campaigns,
    disputes,
    gold_store,
    input_releases,
    jobs,
    ranking,
    versions,
    visibility,
)
from .services import baselines as baseline_service
from .services.errors import ServiceError

#: What a command's user can fix, printed as "Error: …" with exit status 1 (no traceback).
USER_ERRORS = (ServiceError, GoldError, ValidationError)


class CommandGroup(AppGroup):
    """A group of organizer commands: a service error ends a command as a click error."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except USER_ERRORS as exc:
            raise click.ClickException(str(exc)) from None


gold_cli = CommandGroup("gold", help="Import the canonical gold; build and activate versions.")
users_cli = CommandGroup("users", help="Create and list accounts.")
tokens_cli = CommandGroup("tokens", help="Create and revoke API tokens.")
submissions_cli = CommandGroup("submissions", help="List, hide, unhide and rescore submissions.")
reported_cli = CommandGroup("reported", help="Numbers reported in the paper.")
baselines_cli = CommandGroup("baselines", help="Baseline entries and the paper's numbers.")
jobs_cli = CommandGroup("jobs", help="Job workers and the long jobs they run.")
campaigns_cli = CommandGroup("campaigns", help="Annotation campaigns: start, follow, build.")
disputes_cli = CommandGroup("disputes", help="Researchers' disputes of the gold: list, build.")


def _release_dir(explicit: Path | None) -> Path:
    """--from, else SITUATEDQA_DATA, else the downloaded release gold/release."""
    configured = current_app.config.get("SITUATEDQA_DATA")
    return explicit or (Path(configured) if configured else DEFAULT_DOWNLOAD_DIR)


@gold_cli.command("import")
@click.option("--from", "source", type=click.Path(file_okay=False, path_type=Path),
              help="Release folder (default: $SITUATEDQA_DATA, else gold/release).")
def gold_import(source: Path | None) -> None:
    """Verify the release against gold/manifest.json and store it in the database as the
    first gold version (a no-op when it is there already)."""
    gold, version = gold_store.import_gold(_release_dir(source))
    for track, split in gold.available():
        click.echo(f"{track:8} {split:5} {len(gold.get(track, split)):6} examples")
    click.echo(f"gold version {version.name!r} (active: {version.is_active}), stored in the "
               f"database as {version.gold_sha256[:12]}…")


def _gold_version(name: str) -> GoldVersion:
    version = versions.version_named(name, published_only=False)
    if version is None:
        raise click.ClickException(f"no gold version named {name!r} (see `gold versions`)")
    return version


def _echo_changes(changes: list[Change]) -> None:
    """Counts per track, split and partition; keys and answers on public splits only."""
    public = versions.public_changes(changes)
    for track, per_split in public["counts"].items():
        for split, parts in per_split.items():
            for partition, counts in parts.items():
                click.echo(f"{track:8} {split:5} {partition:14} " + ", ".join(
                    f"{kind} {n}" for kind, n in sorted(counts.items())))
    for change in public["examples"]:
        new = change.get("answers", change.get("label", ""))
        click.echo(f"  {change['split']} {change['track']} {change['kind']:8} "
                   f"{change['key']!r} -> {new}")
    if not changes:
        click.echo("no differences")


@gold_cli.command("versions")
def gold_versions() -> None:
    """Every gold version: as-of date, parent, fingerprint, state of its rescore."""
    for version in versions.all_versions():
        job = versions.latest_job(version)
        state = "ACTIVE" if version.is_active else (
            f"job {job.id} {job.status} {job.done}/{job.total}" if job else "built")
        click.echo(f"{version.id:>4}  {version.name:<28} {version.as_of}  "
                   f"{version.fingerprint[:12]}  {state}")


@gold_cli.command("build")
@click.option("--from-update", "update", required=True,
              type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="JSONL update file: one record per changed example.")
@click.option("--name", required=True, help="Name of the new version.")
@click.option("--as-of", "as_of", required=True, type=click.DateTime(["%Y-%m-%d"]),
              help="Date the answers are true as of (YYYY-MM-DD).")
@click.option("--note", default="", help="Changelog note shown publicly.")
@click.option("--parent", help="Parent version (default: the active one).")
def gold_build(update: Path, name: str, as_of: Any, note: str, parent: str | None) -> None:
    """Build a new gold version from its parent and an update file (not activated)."""
    try:
        version = versions.build_version(
            update.read_text(encoding="utf-8"), update.name, name, as_of.date(), note, None,
            _gold_version(parent) if parent else None)
    except UnicodeDecodeError:
        raise click.ClickException(f"{update}: not UTF-8 text") from None
    _echo_changes(versions.stored_changes(version))
    click.echo(f"built gold version {version.name!r} (id {version.id}); "
               f"activate it with `gold activate {version.name!r}`")


@gold_cli.command("activate")
@click.argument("name")
@click.option("--background", is_flag=True,
              help="Hand the rescore to the job workers and return at once "
                   "(follow it with `jobs list`).")
@click.option("--restart", is_flag=True, help="Abandon an unfinished rescore job first.")
@click.option("--full", is_flag=True,
              help="Parse and score every stored file again (default: carry over the "
                   "parent's scores on boards the version did not change, and on the others "
                   "re-evaluate only the examples it changed).")
@click.option("--release-inputs-on", "release_inputs_on", metavar="DATE",
              help="Hold the inputs of the test examples the version adds back until this "
                   "date (YYYY-MM-DD; default: release them when the version is active).")
def gold_activate(name: str, background: bool, restart: bool, full: bool,
                  release_inputs_on: str | None) -> None:
    """Rescore every stored submission against a version, then make it the active one.

    The inputs of the test examples it adds become an input release (/data/releases) when
    it is active, or on the --release-inputs-on date. Without --background the rescore
    runs in this process; job workers that run at the same time share its batches.
    """
    held = input_releases.parse_release_date(release_inputs_on)
    version = _gold_version(name)
    job = jobs.start_activation(version, None, restart=restart, incremental=not full,
                                release_inputs_on=held)
    if background:
        tasks.start(job.id)
        click.echo(f"rescore job {job.id} queued: {job.total} submissions in "
                   f"{len(job.batches)} batches")
        return
    job = run_with_progress(job)
    if job.status != JobStatus.DONE.value:
        raise click.ClickException(f"rescore failed; {gold_store.active_version().name!r} "
                                   f"stays active: {job.error}")
    click.echo(f"{name!r} is now the active gold version ({job.total} submissions rescored)")
    release = input_releases.release_for(version)
    if release is not None:
        counts = ", ".join(f"{track} {c['total']}" for track, c in release.counts.items())
        click.echo(f"input release {release.name!r} ({counts} test examples): public from "
                   f"{release.release_on.isoformat()}")


def run_with_progress(job: Job) -> Job:
    """Run a job's remaining steps in this process with a progress bar; the job after."""
    with tqdm(total=job.total, unit="submission", disable=None) as bar:
        def advance(done: int, total: int) -> None:
            bar.total = total
            bar.update(done - bar.n)
        return jobs.run_inline(job.id, progress=advance)


@gold_cli.command("diff")
@click.argument("old")
@click.argument("new")
def gold_diff(old: str, new: str) -> None:
    """Counts of changed, added and retired examples; keys only on train and dev."""
    _echo_changes(versions.diff_versions(_gold_version(old), _gold_version(new)))


def _user(name: str) -> User:
    user = db.session.scalar(select(User).where(User.username == name))
    if user is None:
        raise click.ClickException(f"no user named {name!r}")
    return user


@users_cli.command("create")
@click.argument("name")
@click.option("--email", required=True, help="Email address.")
@click.option("--password", envvar="SITUATEDQA_PASSWORD", prompt=True, hide_input=True,
              confirmation_prompt=True, help="Password (or $SITUATEDQA_PASSWORD, or a prompt).")
@click.option("--team", help="Team to join or create (default: a team named after the user).")
@click.option("--admin", is_flag=True, help="Make the user an organizer.")
def users_create(name: str, email: str, password: str, team: str | None, admin: bool) -> None:
    """Create a user, joining --team if it exists."""
    user = accounts.create_user(name, email, password, team_name=team, join_team=True,
                                is_admin=admin)
    db.session.commit()
    click.echo(f"created user {user.username} (id {user.id}) in team {user.team.name}"
               + (" as organizer" if admin else ""))


@users_cli.command("list")
def users_list() -> None:
    """Every user with team and role."""
    for user in db.session.scalars(select(User).order_by(User.id)):
        role = "organizer" if user.is_admin else "participant"
        role += ", annotator" if user.is_annotator else ""
        click.echo(f"{user.id:>5}  {user.username:<20} {user.team.name:<20} {role}")


@users_cli.command("annotator")
@click.argument("name")
@click.option("--revoke", is_flag=True, help="Take the annotator role away.")
def users_annotator(name: str, revoke: bool) -> None:
    """Give a user the annotator role (campaign tasks), or take it away."""
    campaigns.set_annotator(_user(name), not revoke, None)
    click.echo(f"{name} is {'no longer ' if revoke else ''}an annotator")


@tokens_cli.command("create")
@click.argument("name")
@click.option("--label", default="cli", show_default=True, help="Name of the token.")
@click.option("--days", type=click.IntRange(min=1), help="Lifetime (default: the setting).")
def tokens_create(name: str, label: str, days: int | None) -> None:
    """Create an API token for user NAME; the token alone is printed on the last line."""
    token, raw = accounts.create_token(_user(name), label, days)
    db.session.commit()
    click.echo(f"token {token.id} for {name}, expires {token.expires_at:%Y-%m-%d %H:%M} UTC; "
               "it is shown only now:")
    click.echo(raw)


@tokens_cli.command("revoke")
@click.argument("token_id", type=int)
def tokens_revoke(token_id: int) -> None:
    """Revoke a token by id."""
    token = db.session.get(ApiToken, token_id)
    if token is None:
        raise click.ClickException(f"no token with id {token_id}")
    accounts.revoke_token(token)
    db.session.commit()
    click.echo(f"revoked token {token_id} ({token.prefix}…)")


@submissions_cli.command("list")
@click.option("--track", type=click.Choice(TRACKS), help="Only this track.")
@click.option("--split", type=click.Choice(SPLITS), help="Only this split.")
def submissions_list(track: str | None, split: str | None) -> None:
    """Every submission (deleted ones marked), newest first."""
    query = select(Submission).order_by(Submission.id.desc())
    if track:
        query = query.where(Submission.track == track)
    if split:
        query = query.where(Submission.split == split)
    for s in db.session.scalars(query):
        flags = ",".join(name for name, on in (
            ("hidden", s.hidden), ("flagged", s.flag_reason), ("deleted", s.deleted_at),
            ("baseline", s.is_baseline)) if on)
        click.echo(f"{s.id:>6}  {s.track:<8} {s.split:<5} {s.visibility:<8} {s.team.name:<20} "
                   f"{s.method_name}  {flags}")


def _submission(submission_id: int) -> Submission:
    submission = db.session.get(Submission, submission_id)
    if submission is None:
        raise click.ClickException(f"no submission with id {submission_id}")
    return submission


@submissions_cli.command("hide")
@click.argument("submission_id", type=int)
@click.option("--reason", required=True, help="Why (written to the audit log).")
def submissions_hide(submission_id: int, reason: str) -> None:
    """Hide a submission from the leaderboards."""
    visibility.hide(_submission(submission_id), None, reason)
    click.echo(f"submission {submission_id} hidden")


@submissions_cli.command("unhide")
@click.argument("submission_id", type=int)
@click.option("--reason", default="", help="Why (written to the audit log).")
def submissions_unhide(submission_id: int, reason: str) -> None:
    """Show a hidden submission again."""
    visibility.unhide(_submission(submission_id), None, reason)
    click.echo(f"submission {submission_id} visible again")


@submissions_cli.command("rescore")
@click.option("--gold-version", "version_name", help="Gold version (default: the active one).")
@click.option("--full", is_flag=True,
              help="Parse and score every stored file again, as after a parser or scorer "
                   "change (default: carry over the parent version's rows where the version "
                   "did not change a board, and re-evaluate only changed examples).")
def submissions_rescore(version_name: str | None, full: bool) -> None:
    """Score every stored submission again against a published gold version and replace
    its rows: the rescore job, run in this process (the active version stays active)."""
    version = _gold_version(version_name) if version_name else gold_store.active_version()
    job = jobs.start_rescore(version, None, incremental=not full)
    job = run_with_progress(job)
    if job.status != JobStatus.DONE.value:
        raise click.ClickException(f"rescore job {job.id} failed: {job.error}")
    click.echo(f"rescored {job.total} submissions against {version.name!r} (job {job.id})")


@submissions_cli.command("rank-pairs")
@click.option("--gold-version", "version_name", help="Gold version (default: the active one).")
@click.option("--track", type=click.Choice(TRACKS), help="One track (default: every track).")
@click.option("--split", type=click.Choice(SPLITS), help="One split (default: every split).")
def submissions_rank_pairs(version_name: str | None, track: str | None,
                           split: str | None) -> None:
    """Test and store the rank-group decision of every neighbouring pair on the boards that
    has none, as after rows were imported in bulk or scored before decisions were stored
    (an upload stores the pairs beside it; a page read, those it tested)."""
    version = _gold_version(version_name) if version_name else gold_store.active_version()
    resamples = ranking.resamples_setting()
    for board_track in [track] if track else TRACKS:
        for board_split in [split] if split else SPLITS:
            tested = ranking.fill_pairs(board_track, board_split, version.id, resamples)
            click.echo(f"{board_track} {board_split}: {tested} pairs tested and stored")


@reported_cli.command("import")
@click.argument("file", type=click.File(encoding="utf-8"))
def reported_import(file: Any) -> None:
    """Add paper-reported rows from a JSON list of {track, split, method_name, source,
    metrics, model_type?, fine_tuned?, paper_url?}."""
    try:
        rows = [_reported_entry(item) for item in json.load(file)]
    except (ValueError, TypeError, KeyError) as exc:
        raise click.ClickException(f"{file.name}: {exc}") from None
    db.session.add_all(rows)
    db.session.commit()
    click.echo(f"added {len(rows)} reported entries")


def _reported_entry(item: dict[str, Any]) -> ReportedEntry:
    track, split = item["track"], item["split"]
    if track not in TRACK_INFO or split not in SPLITS:
        raise ValueError(f"unknown track/split {track}/{split}")
    model_type = item.get("model_type", ModelType.OTHER.value)
    if model_type not in {m.value for m in ModelType}:
        raise ValueError(f"unknown model type {model_type!r}")
    metrics = {str(k): float(v) for k, v in item["metrics"].items()}
    return ReportedEntry(track=track, split=split, method_name=str(item["method_name"]),
                         source=str(item["source"]), metrics=metrics, model_type=model_type,
                         fine_tuned=bool(item.get("fine_tuned", False)),
                         paper_url=item.get("paper_url"),
                         primary_metric=metrics.get(TRACK_INFO[track].primary))


@baselines_cli.command("regenerate")
@click.option("--from-file", "from_files", multiple=True, metavar="RUNNER:TRACK:SPLIT:PATH",
              help="Take this runner output (with its .meta.json) instead of running; repeatable.")
@click.option("--from-dir", type=click.Path(path_type=Path),
              help="Take every *.jsonl in DIR, keyed by its .meta.json sidecar.")
@click.option("--runner", "runners", multiple=True, type=click.Choice(
    baseline_service.QUICK_RUNNERS + baseline_service.SLOW_RUNNERS),
    help="Run only these runners (default: id-random, id-tfidf, nn-train); repeatable.")
@click.option("--track", "tracks", multiple=True, type=click.Choice(TRACKS),
              help="Run only on these tracks (default: every track a runner answers).")
@click.option("--split", "splits", multiple=True, type=click.Choice(SPLITS),
              help="Run only on these splits (default: dev and test).")
@click.option("--with-minilm", is_flag=True, help="Also run id-minilm (trains for minutes).")
@click.option("--quick", is_flag=True,
              help="The quick start's set: paper numbers, id-random, id-tfidf, nn-train and "
                   "the SmolLM2 entries (read from the committed reference files in "
                   "submissions/reference/).")
@click.option("--reported-only", is_flag=True, help="Only load or refresh the paper's numbers.")
@click.option("--data", type=click.Path(file_okay=False, path_type=Path),
              help="Release folder the runners read (default: $SITUATEDQA_DATA, else "
                   "gold/release).")
@click.option("--seed", default=0, show_default=True, type=int, help="Runner seed.")
@click.option("--threads", default=1, show_default=True, type=click.IntRange(min=1),
              help="CPU threads per runner.")
@click.option("--confirm-differences", is_flag=True,
              help="Publish runs that differ from the paper's (DPR, BART) or the reference "
                   "setup, each entry with a note of how; without it such runs are refused.")
def baselines_regenerate(from_files: tuple[str, ...], from_dir: Path | None,
                         runners: tuple[str, ...], tracks: tuple[str, ...],
                         splits: tuple[str, ...], with_minilm: bool, quick: bool,
                         reported_only: bool, data: Path | None, seed: int,
                         threads: int, confirm_differences: bool) -> None:
    """Run (or read) the baselines, score them against every gold version and replace the
    previous baseline entries and paper numbers in one transaction; unchanged ones stay."""
    chosen = [name for name, on in (("--from-file", from_files), ("--from-dir", from_dir),
                                    ("--runner", runners), ("--with-minilm", with_minilm),
                                    ("--track", tracks), ("--split", splits)) if on]
    if (quick or reported_only) and chosen:
        raise click.UsageError(f"{'--quick' if quick else '--reported-only'} takes no "
                               f"{', '.join(chosen)}")
    given = bool(from_files or from_dir)
    if given and (runners or with_minilm or tracks or splits):
        raise click.UsageError("--from-file/--from-dir take files as they are; --runner, "
                               "--track, --split and --with-minilm choose what to run")
    files = [baseline_service.parse_spec(spec) for spec in from_files]
    files += baseline_service.discover(from_dir) if from_dir else []
    if quick and baseline_service.REFERENCE_DIR.is_dir():
        # The committed reference outputs: the same files a rerun writes, read in seconds.
        files, given = baseline_service.discover(baseline_service.REFERENCE_DIR), True
    runs = [] if given or reported_only else baseline_service.default_plan(
        runners, tracks, splits, with_minilm=with_minilm)
    report = baseline_service.regenerate(
        runs, files, data_dir=_release_dir(data) if runs else None, seed=seed,
        threads=threads, progress=lambda line: click.echo(line, err=True),
        confirmed_by="an organizer at the command line" if confirm_differences else None)
    for change in report.entries:
        click.echo(f"{change.action:8} {change.key}  submission {change.submission_id}"
                   + "".join(f" (replaces {i})" for i in change.removed_ids))
    if report.reported:
        counts = report.reported
        click.echo(f"paper numbers: {counts.added} added, {counts.updated} updated, "
                   f"{counts.removed} removed, {counts.unchanged} unchanged")


@baselines_cli.command("list")
def baselines_list() -> None:
    """Current baseline entries with their file, code version and settings."""
    for s in db.session.scalars(select(Submission).where(
            Submission.is_baseline.is_(True), Submission.deleted_at.is_(None))
            .order_by(Submission.track, Submission.split, Submission.id)):
        record = s.baseline_settings or {}
        click.echo(f"{s.id:>6}  {s.baseline_runner or '?':<10} {s.track:<8} {s.split:<5} "
                   f"{s.file_sha256[:12]}  {record.get('code_version')}  "
                   f"{json.dumps(record.get('settings'), sort_keys=True)}")


@jobs_cli.command("worker")
@click.option("--concurrency", type=click.IntRange(min=1), default=1, show_default=True,
              help="Worker processes (each scores one batch at a time).")
@click.option("--loglevel", default="INFO", show_default=True, help="Celery log level.")
def jobs_worker(concurrency: int, loglevel: str) -> None:
    """Run one job worker (Celery underneath) until it is stopped.

    It takes rescore and regeneration steps from the broker ($SITUATEDQA_BROKER_URL, or
    the embedded SQLite broker) and, every JOB_SWEEP_SECONDS, sends again any step whose
    worker died.
    """
    if current_app.config["JOBS_EAGER"]:
        raise click.ClickException("SITUATEDQA_JOBS_EAGER is set: jobs run where they start, "
                                   "so a worker would get nothing")
    tasks.run_worker(current_app._get_current_object(),  # type: ignore[attr-defined]
                     concurrency, loglevel)


@jobs_cli.command("list")
def jobs_list() -> None:
    """Every job with its kind, state and progress, newest first."""
    click.echo(f"{'id':>5}  {'kind':<10} {'state':<8} {'progress':>13}  {'started':<19}  "
               "target / error")
    for job in db.session.scalars(select(Job).order_by(Job.id.desc())):
        target = job.gold_version.name if job.gold_version else json.dumps(job.params)
        started = f"{job.started_at:%Y-%m-%d %H:%M:%S}" if job.started_at else "-"
        click.echo(f"{job.id:>5}  {job.kind:<10} {job.status:<8} "
                   f"{f'{job.done}/{job.total}':>13}  {started:<19}  {target}"
                   + (f"  ({job.error})" if job.error else ""))


@jobs_cli.command("sweep")
def jobs_sweep() -> None:
    """Send again every job step whose lease has passed (workers do this by themselves)."""
    click.echo(f"{jobs.sweep(tasks.dispatch)} job step(s) dispatched")


def _campaign(campaign_id: int) -> Any:
    return campaigns.campaign_by_id(campaign_id)


def _split_list(values: tuple[str, ...]) -> list[str]:
    return [v.strip() for value in values for v in value.split(",") if v.strip()]


@campaigns_cli.command("create")
@click.argument("name")
@click.option("--kind", type=click.Choice(["refresh", "contexts", "locations"]),
              default="refresh", show_default=True, help="What to annotate.")
@click.option("--track", default="present", show_default=True, help="Track to annotate.")
@click.option("--split", default="test", show_default=True, type=click.Choice(SPLITS))
@click.option("--as-of", "as_of", required=True, type=click.DateTime(["%Y-%m-%d"]),
              help="The date the questions are asked as of (YYYY-MM-DD).")
@click.option("--annotators", "names", multiple=True, required=True,
              help="Annotator user names (comma-separated or repeated; at least two).")
@click.option("--limit", default=100, show_default=True, help="At most this many tasks.")
@click.option("--ids", multiple=True, help="Question ids (contexts, locations).")
@click.option("--values", multiple=True,
              help="New dates (contexts: YYYY or YYYY-MM-DD) or locations.")
@click.option("--years", help="contexts: a range of years, e.g. 2022-2026.")
@click.option("--note", default="", help="The changelog note of the version it builds.")
def campaigns_create(name: str, kind: str, track: str, split: str, as_of: Any,
                     names: tuple[str, ...], limit: int, ids: tuple[str, ...],
                     values: tuple[str, ...], years: str | None, note: str) -> None:
    """Start a campaign: its tasks, two annotators each."""
    chosen = _split_list(values)
    if years:
        first, _, last = years.partition("-")
        if not (first.isdigit() and last.isdigit()):
            raise click.ClickException("--years must be FIRST-LAST, e.g. 2022-2026")
        chosen += [str(y) for y in range(int(first), int(last) + 1)]
    try:
        numbers = [int(i) for i in _split_list(ids)]
    except ValueError:
        raise click.ClickException("--ids must be integers") from None
    campaign = campaigns.create_campaign(name, kind, track, split, as_of.date(),
                                         _split_list(names), None, limit=limit, ids=numbers,
                                         values=chosen, note=note)
    click.echo(f"started campaign {campaign.name!r} (id {campaign.id}): "
               f"{len(campaign.tasks)} tasks")


@campaigns_cli.command("list")
def campaigns_list() -> None:
    """Every campaign with its progress."""
    for campaign in campaigns.all_campaigns():
        stats = campaigns.progress(campaign)
        click.echo(f"{campaign.id:>4}  {campaign.name:<24} {campaign.kind:<9} "
                   f"{campaign.track}/{campaign.split}  {stats.responses}/{stats.slots} "
                   f"answers, {stats.waiting} to adjudicate")


@campaigns_cli.command("show")
@click.argument("campaign_id", type=int)
def campaigns_show(campaign_id: int) -> None:
    """Progress, time per task and agreement per annotator pair."""
    campaign = _campaign(campaign_id)
    stats = campaigns.progress(campaign)
    click.echo(f"{campaign.name}: {stats.responses}/{stats.slots} answers ({stats.percent}%), "
               f"{stats.accepted} accepted, {stats.waiting} to adjudicate, "
               f"{stats.adjudicated} adjudicated")
    if stats.median_seconds is not None:
        click.echo(f"time per task: median {stats.median_seconds:.0f} s, "
                   f"mean {stats.mean_seconds or 0:.0f} s")
    for name, count, median in stats.annotators:
        click.echo(f"{name}: {count} answered" + (
            f", median {median:.0f} s a task" if median is not None else ""))
    for pair in stats.pairs:
        raw = "—" if pair.raw is None else f"{pair.raw:.2f}"
        kappa = "—" if pair.kappa is None else f"{pair.kappa:.2f}"
        click.echo(f"{pair.first} × {pair.second}: {pair.tasks} tasks, raw agreement {raw}, "
                   f"Cohen's kappa {kappa}")


@campaigns_cli.command("export")
@click.argument("campaign_id", type=int)
def campaigns_export(campaign_id: int) -> None:
    """The campaign's update file so far (for `gold build --from-update`)."""
    click.echo(campaigns.update_text(_campaign(campaign_id)), nl=False)


@campaigns_cli.command("build")
@click.argument("campaign_id", type=int)
@click.option("--name", required=True, help="Name of the new gold version.")
@click.option("--as-of", "as_of", type=click.DateTime(["%Y-%m-%d"]),
              help="As-of date (default: the campaign's).")
@click.option("--note", default="", help="Changelog note (default: the campaign's).")
def campaigns_build(campaign_id: int, name: str, as_of: Any, note: str) -> None:
    """Build a gold version from the accepted and adjudicated tasks (not activated)."""
    version = campaigns.build(_campaign(campaign_id), name, as_of.date() if as_of else None,
                              note, None)
    _echo_changes(versions.stored_changes(version))
    click.echo(f"built gold version {version.name!r} (id {version.id}); "
               f"activate it with `gold activate {version.name!r}`")


@disputes_cli.command("list")
@click.option("--all", "every", is_flag=True, help="Decided ones too (default: open only).")
def disputes_list(every: bool) -> None:
    """Disputes waiting for a decision (decide them on /admin/queue)."""
    rows = disputes.all_disputes() if every else disputes.queue()
    for d in rows:
        click.echo(f"{d.id:>5}  {d.status:<8} {d.track}/{d.split} {d.key}  by {d.user.username}: "
                   f"{' | '.join(d.proposed_answers)}")
    click.echo(f"{len(rows)} dispute(s); {len(disputes.pending())} accepted waiting for a "
               "gold version")


@disputes_cli.command("export")
def disputes_export() -> None:
    """The accepted disputes' update file (for `gold build --from-update`)."""
    click.echo(disputes.update_text(disputes.pending()), nl=False)


@disputes_cli.command("build")
@click.option("--name", required=True, help="Name of the new gold version.")
@click.option("--as-of", "as_of", type=click.DateTime(["%Y-%m-%d"]),
              help="As-of date (default: today).")
@click.option("--note", default="", help="Changelog note (the credit line is added).")
def disputes_build(name: str, as_of: Any, note: str) -> None:
    """Build a gold version from the accepted disputes no version holds yet (not activated)."""
    version = disputes.build(name, as_of.date() if as_of else None, note, None)
    _echo_changes(versions.stored_changes(version))
    click.echo(f"built gold version {version.name!r} (id {version.id}); "
               f"activate it with `gold activate {version.name!r}`")


@click.command("setup")
@with_appcontext
@click.option("--from", "source", type=click.Path(file_okay=False, path_type=Path),
              help="Release folder (default: $SITUATEDQA_DATA, else gold/release).")
def setup(source: Path | None) -> None:
    """Bring the database to the current schema and import the gold if it is missing."""
    from flask_migrate import upgrade

    upgrade(directory=current_app.extensions["migrate"].directory)
    if db.session.scalar(select(GoldVersion.id).limit(1)) is not None:
        click.echo("database upgraded; gold already imported")
        return
    click.get_current_context().invoke(gold_import, source=source)


def init_app(app: Flask) -> None:
    """Register the command groups on the app."""
    for group in (gold_cli, users_cli, tokens_cli, submissions_cli, reported_cli,
                  baselines_cli, jobs_cli, campaigns_cli, disputes_cli):
        app.cli.add_command(group)
    app.cli.add_command(setup)
