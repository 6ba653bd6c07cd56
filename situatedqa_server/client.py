"""`situatedqa`: a command-line client for the evaluation server's REST API."""

from __future__ import annotations

import json
import os
import sys
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import numpy as np
import requests
from platformdirs import user_config_dir

from benchmark import METRIC_LABELS, TRACK_INFO
from benchmark.cli import format_table
from benchmark.scoring import ScoreResult
from benchmark.tracks import CUTOFF_METRICS, GAP, PROVENANCE_METRICS

DEFAULT_URL = "http://127.0.0.1:8000"
CONFIG_ENV = "SITUATEDQA_CONFIG_DIR"
TIMEOUT = 120
#: Retries of an upload after a connection error, with 1, 2, 4 … seconds between them.
RETRIES = 4
RETRY_DELAY = 1.0
FINAL_STATUSES = ("scored", "failed")


def config_path() -> Path:
    """Where the client keeps its URL and token (0600)."""
    base = os.environ.get(CONFIG_ENV) or user_config_dir("situatedqa")
    return Path(base) / "config.json"


def read_config() -> dict[str, str]:
    """The stored server URL and token, or an empty config."""
    path = config_path()
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise click.ClickException(
            f"{path}: unreadable config ({exc}); run `situatedqa login`") from None
    return {k: str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def write_config(config: Mapping[str, str]) -> Path:
    """Store the config readable by the user alone (mode 0600 from the first byte)."""
    path = config_path()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump(dict(config), out)
    os.chmod(path, 0o600)
    return path


@dataclass
class Api:
    """A thin session on the server's /api/v1 routes that turns errors into messages."""

    url: str
    token: str | None

    def request(self, method: str, path: str, *, idempotency_key: str | None = None,
                **kwargs: Any) -> requests.Response:
        """Send a request; raise ClickException with the server's message on errors.

        With an idempotency key, a connection error is retried (the server answers a
        repeated key with the first response, so nothing is stored or counted twice).
        """
        headers = {"Accept": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        if idempotency_key:
            headers["Idempotency-Key"] = idempotency_key
        attempts = RETRIES + 1 if idempotency_key else 1
        for attempt in range(attempts):
            for stream in (kwargs.get("files") or {}).values():
                stream[1].seek(0)  # a retry sends the whole file again
            try:
                response = requests.request(method, self.url.rstrip("/") + path,
                                            headers=headers, timeout=TIMEOUT, **kwargs)
                break
            except (requests.ConnectionError, requests.Timeout) as exc:
                if attempt + 1 == attempts:
                    raise click.ClickException(f"cannot reach {self.url}: {exc}") from None
                click.echo(f"connection error ({type(exc).__name__}); retrying with the "
                           f"same Idempotency-Key", err=True)
                time.sleep(RETRY_DELAY * 2 ** attempt)
            except requests.RequestException as exc:
                raise click.ClickException(f"cannot reach {self.url}: {exc}") from None
        if response.status_code >= 400:
            raise click.ClickException(explain_error(response))
        return response

    def json(self, method: str, path: str, **kwargs: Any) -> Any:
        """Send a request and decode its JSON body."""
        return self.request(method, path, **kwargs).json()


def explain_error(response: requests.Response) -> str:
    """A human sentence for an API error, from the server's one JSON error shape."""
    try:
        error = response.json().get("error", {})
    except ValueError:
        error = {}
    code = error.get("code", "")
    message = error.get("message") or response.reason or "request failed"
    details = error.get("details")
    if response.status_code == 401:
        hint = "your token has expired" if "expired" in (code + message) else "not authenticated"
        return f"{message} ({hint}): create a new token and run `situatedqa login`"
    if response.status_code == 429:
        reset = details.get("resets_at") if isinstance(details, dict) else None
        when = f"; the quota resets at {reset}" if reset else ""
        retry = response.headers.get("Retry-After")
        after = f"; retry after {retry} s" if retry and not reset else ""
        return f"{message}{when}{after}"
    if isinstance(details, dict) and details.get("problems"):
        lines = [message] + [f"  {format_problem(p)}" for p in details["problems"]]
        return "\n".join(lines)
    if isinstance(details, dict) and isinstance(details.get("fields"), dict):
        lines = [message] + [f"  {name}: {'; '.join(map(str, errors))}"
                             if isinstance(errors, list) else f"  {name}: {errors}"
                             for name, errors in details["fields"].items()]
        return "\n".join(lines)
    return f"{message} (HTTP {response.status_code})"


def format_problem(problem: Mapping[str, Any]) -> str:
    """One validation problem as file:line: message (key)."""
    where = problem.get("file") or "file"
    if problem.get("line"):
        where += f":{problem['line']}"
    key = f" (key {problem['key']!r})" if problem.get("key") else ""
    return f"{where}: {problem.get('message')}{key}"


def paper_order(track: str, names: Iterable[str]) -> list[str]:
    """Metric names in the paper's order: the track's columns, then per source, then AUC."""
    columns = list(TRACK_INFO[track].metrics) if track in TRACK_INFO else []

    def key(name: str) -> tuple[int, str, int]:
        """Track columns first, then (source, statistic), then anything else by name."""
        if name in columns:
            return 0, "", columns.index(name)
        if name in CUTOFF_METRICS:  # after the provenance figures, in their own order
            return 4, "", CUTOFF_METRICS.index(name)
        statistic, _, source = name.partition("_")
        if statistic in columns:
            return 1, source, columns.index(statistic)
        if name in PROVENANCE_METRICS:  # last, in their own order
            return 3, "", PROVENANCE_METRICS.index(name)
        return 2, name, 0
    return sorted(names, key=key)


def print_scores(result: Mapping[str, Any]) -> None:
    """Metrics in the paper's order with labels, 95% CIs and n: the offline scorer's table."""
    metrics = result.get("metrics") or {}
    names = paper_order(result.get("track", ""), metrics)
    counts = result.get("counts") or {}
    n = result.get("n") or max(counts.values(), default=0)
    table = ScoreResult(
        track=result.get("track", "?"), split=result.get("split", "?"), n=n,
        metrics={name: metrics[name] for name in names},
        ci={name: tuple(ci) if (ci := (result.get("ci") or {}).get(name)) else None
            for name in names},
        counts={name: counts.get(name, 0) for name in names},
        outcomes=np.zeros(0, dtype=np.int64))
    if result.get("feedback"):  # the Ladder withheld this submission's own scores
        click.echo(f"This submission is {result['feedback']}.")
    click.echo(format_table(table))
    if GAP in metrics:
        click.echo(PROVENANCE_NOTE)


#: Under a score that has the provenance figures (benchmark.provenance).
PROVENANCE_NOTE = (
    "Unreleased / released: the score on the test examples whose gold answer was never "
    "published, and on the release's (not in the paper). The contamination gap (released "
    "minus unreleased) is an indication, not a proof: the new examples may simply be harder.")


def echo_json(data: Any) -> None:
    """Machine-readable output for scripts (--json)."""
    click.echo(json.dumps(data, indent=2, sort_keys=True))


pass_api = click.make_pass_decorator(Api)


@click.group()
@click.option("--url", envvar="SITUATEDQA_URL", help="Server address (default: the stored one).")
@click.pass_context
def main(ctx: click.Context, url: str | None) -> None:
    """Submit predictions to a SituatedQA evaluation server and read its leaderboards."""
    config = read_config() if ctx.invoked_subcommand != "login" else {}
    ctx.obj = Api(url or config.get("url") or DEFAULT_URL,
                  os.environ.get("SITUATEDQA_TOKEN") or config.get("token"))


@main.command()
@click.option("--token", prompt=True, hide_input=True, envvar="SITUATEDQA_TOKEN",
              help="An API token made on the server's account page.")
@pass_api
def login(api: Api, token: str) -> None:
    """Check a token against the server and store it (mode 0600)."""
    api.token = token.strip()
    api.json("GET", "/api/v1/submissions")
    path = write_config({"url": api.url, "token": api.token})
    click.echo(f"logged in to {api.url}; token stored in {path}")


@main.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--track", required=True, help="Track, e.g. temp, geo, temp-id.")
@click.option("--split", required=True, type=click.Choice(["train", "dev", "test"]))
@click.option("--method-name", default=None, help="Method name (default: the file name).")
@click.option("--public/--private", default=False, help="Publish on the leaderboard now.")
@click.option("--meta", "metadata", multiple=True, metavar="FIELD=VALUE",
              help="Extra metadata fields, e.g. paper_url=https://…, knowledge_date=2021-02 "
                   "or knowledge_cutoff=2021-06-30; "
                   "the server refuses an unknown field and names the ones it takes.")
@click.option("--filter", "harness_filter", default=None,
              help="The filter to read of an lm-eval samples file whose task has several.")
@click.option("--json", "as_json", is_flag=True, help="Print the scored submission as JSON.")
@pass_api
def submit(api: Api, file: Path, track: str, split: str, method_name: str | None,
           public: bool, metadata: tuple[str, ...], harness_filter: str | None,
           as_json: bool) -> None:
    """Upload FILE (any accepted format, an lm-eval samples file or an Inspect log too); it
    is validated and scored during the upload, then printed."""
    fields = {"track": track, "split": split, "method_name": method_name or file.stem,
              "public": "true" if public else "false"}
    if harness_filter is not None:
        fields["harness_filter"] = harness_filter
    for item in metadata:
        name, sep, value = item.partition("=")
        if not sep:
            raise click.BadParameter(f"{item!r} is not FIELD=VALUE", param_hint="--meta")
        fields[name] = value
    with file.open("rb") as stream:
        result = api.json("POST", "/api/v1/submissions", data=fields,
                          files={"file": (file.name, stream)},
                          idempotency_key=uuid.uuid4().hex)
    result = with_every_interval(api, wait_for_scores(api, result))
    if as_json:
        echo_json(result)
        return
    click.echo(f"submission {result['id']}: {result.get('status', 'scored')}"
               + (f" (scorer {result['scorer']})" if result.get("scorer") else ""))
    print_scores({"track": track, "split": split, **result})
    if pending_intervals(result):
        click.echo(f"The error classes' 95% CIs are still being computed; "
                   f"`situatedqa show {result['id']}` prints them.")


def pending_intervals(result: Mapping[str, Any]) -> list[str]:
    """The error figures of a result that have a value and no CI yet: the server computes
    those CIs just after the upload's answer (they cost more than the rest of the score)."""
    info = TRACK_INFO.get(str(result.get("track")))
    metrics, ci = result.get("metrics") or {}, result.get("ci") or {}
    return [name for name in (info.error_metrics if info else ())
            if metrics.get(name) is not None and not ci.get(name)]


def with_every_interval(api: Api, result: dict[str, Any], poll: float = 0.5,
                        attempts: int = 20) -> dict[str, Any]:
    """The scored submission with the error classes' CIs: read again until the server has
    them (a read shows them as soon as they are computed), for at most attempts polls."""
    for _ in range(attempts):
        pending = pending_intervals(result)
        if not pending:
            return result
        time.sleep(poll)
        fresh = api.json("GET", f"/api/v1/submissions/{result['id']}").get("ci") or {}
        # Only the pending CIs are taken: the rest of the answer stays the upload's own.
        result = {**result, "ci": {**(result.get("ci") or {}),
                                   **{name: fresh.get(name) for name in pending}}}
    return result


def wait_for_scores(api: Api, result: dict[str, Any], poll: float = 2.0) -> dict[str, Any]:
    """Poll a submission until it is scored (this server scores during the upload)."""
    deadline = time.monotonic() + TIMEOUT
    while result.get("status", "scored") not in FINAL_STATUSES:
        if time.monotonic() > deadline:
            raise click.ClickException(f"submission {result['id']} is still "
                                       f"{result.get('status')}; check `situatedqa show`")
        time.sleep(poll)
        result = api.json("GET", f"/api/v1/submissions/{result['id']}")
    return result


@main.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print the raw JSON.")
@pass_api
def list_command(api: Api, as_json: bool) -> None:
    """Your team's submissions."""
    data = api.json("GET", "/api/v1/submissions")
    if as_json:
        echo_json(data)
        return
    click.echo(f"{'id':>6}  {'track':<8} {'split':<5} {'visible':<8} {'primary':>13}  method")
    for item in data.get("submissions", []):
        primary = item.get("primary_metric")
        value = (item.get("metrics") or {}).get(primary) if primary else None
        label = METRIC_LABELS.get(primary or "", primary or "")
        shown = f"{label} {value:.2f}" if isinstance(value, (int, float)) else "-"
        click.echo(f"{item['id']:>6}  {item['track']:<8} {item['split']:<5} "
                   f"{item.get('visibility', ''):<8} {shown:>13}  {item.get('method_name', '')}")


@main.command()
@click.argument("submission_id", type=int)
@click.option("--json", "as_json", is_flag=True, help="Print the raw JSON.")
@pass_api
def show(api: Api, submission_id: int, as_json: bool) -> None:
    """One submission's metadata and scores."""
    item = api.json("GET", f"/api/v1/submissions/{submission_id}")
    if as_json:
        echo_json(item)
        return
    click.echo(f"{item.get('method_name')} ({item['track']}/{item['split']}, "
               f"{item.get('visibility', '')}, {item.get('submitted_at', '')})")
    print_scores(item)


@main.command()
@click.argument("track")
@click.option("--split", default="test", show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the raw JSON.")
@pass_api
def leaderboard(api: Api, track: str, split: str, as_json: bool) -> None:
    """A track's leaderboard."""
    data = api.json("GET", f"/api/v1/leaderboards/{track}", params={"split": split})
    if as_json:
        echo_json(data)
        return
    entries = data.get("entries", [])
    primary = data.get("primary_metric") or (TRACK_INFO[track].primary
                                             if track in TRACK_INFO else "")
    label = METRIC_LABELS.get(primary, primary)
    click.echo(f"{'rank':>6} {label:>7} {'':<2} method  (team)")
    for entry in entries:
        value = (entry.get("metrics") or {}).get(primary)
        shown = f"{value:.2f}" if isinstance(value, (int, float)) else "-"
        marks = "".join(m for m, on in (("B", entry.get("baseline")),
                                        ("P", entry.get("reported"))) if on)
        rank = entry.get("rank")
        team = f"  ({entry['team']})" if entry.get("team") else ""
        click.echo(f"{'-' if rank is None else rank!s:>6} {shown:>7} {marks:<2} "
                   f"{entry.get('method_name', '')}{team}")
    if entries:
        click.echo("B: baseline · P: reported in the paper (no rank)")


#: The export formats of `situatedqa export`, by the API route that writes each.
EXPORT_ROUTES = {"hf-eval-results": "eval_results.yaml",
                 "every-eval-ever": "every_eval_ever.json",
                 "model-index": "model-index.yaml"}


@main.command()
@click.argument("submission_id", type=int)
@click.option("--format", "export_format", type=click.Choice(list(EXPORT_ROUTES)),
              default="hf-eval-results", show_default=True,
              help="hf-eval-results: a Hub model repository's .eval_results/*.yaml, one "
                   "entry per paper metric; every-eval-ever: an Every Eval Ever record with "
                   "each metric's CI; model-index: the legacy model-card block.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              help="Output file (default: standard output).")
@pass_api
def export(api: Api, submission_id: int, export_format: str, output: Path | None) -> None:
    """A submission's paper metrics in a format to publish them in."""
    route = EXPORT_ROUTES[export_format]
    text = api.request("GET", f"/api/v1/submissions/{submission_id}/{route}").text
    if output is None:
        click.echo(text, nl=not text.endswith("\n"))
        return
    output.write_text(text, encoding="utf-8")
    click.echo(f"wrote {output}", err=True)


@main.command("download-inputs")
@click.argument("track")
@click.argument("split")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              help="Output file (default: TRACK.SPLIT.blank.jsonl, or "
                   "TRACK.SPLIT.RELEASE.blank.jsonl).")
@click.option("--release", metavar="NAME",
              help="One input release's test inputs alone (the names: /data/releases); "
                   "default: the release's inputs and every published input release's.")
@pass_api
def download_inputs(api: Api, track: str, split: str, output: Path | None,
                    release: str | None) -> None:
    """The blank input file of a track and split (questions and contexts, no answers).

    On test: the release's inputs and every published input release's, which an upload
    answers (the release's, plus any whole input releases)."""
    response = api.request("GET", f"/data/{track}/{split}/blank.jsonl",
                           params={"release": release} if release else None)
    target = output or Path(f"{track}.{split}.{release + '.' if release else ''}blank.jsonl")
    target.write_bytes(response.content)
    click.echo(f"wrote {target}")


if __name__ == "__main__":
    sys.exit(main())
