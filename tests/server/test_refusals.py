"""One way to refuse: every refusal is a service error with its status, views hold no SQL,
`abort()` is left only for a plain 404, and an unknown track is one error with one status."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient

import situatedqa_server
from situatedqa_server import insight
from situatedqa_server.services import board, diagnostics
from situatedqa_server.services.errors import ServiceError

PACKAGE = Path(situatedqa_server.__file__).parent


def view_modules() -> list[Path]:
    """The modules of the package that define a blueprint (the views)."""
    return sorted(p for p in PACKAGE.glob("*.py") if "Blueprint(" in p.read_text())


def calls(path: Path, name: str) -> list[ast.Call]:
    """Every call of a function named `name` (plain or as an attribute) in a module."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call):
            func = node.func
            called = func.id if isinstance(func, ast.Name) else (
                func.attr if isinstance(func, ast.Attribute) else None)
            if called == name:
                found.append(node)
    return found


def test_the_scan_sees_the_views() -> None:
    names = {p.stem for p in view_modules()}
    assert {"admin", "api", "auth", "campaigns", "insight", "snapshots", "submissions",
            "versions", "leaderboards"} <= names


@pytest.mark.parametrize("module", view_modules(), ids=lambda p: p.stem)
def test_a_view_module_runs_no_sql(module: Path) -> None:
    assert [c.lineno for c in calls(module, "select")] == []


@pytest.mark.parametrize("module", view_modules(), ids=lambda p: p.stem)
def test_abort_is_left_for_plain_404s(module: Path) -> None:
    """abort(404) for an unknown id, nothing else: a refusal with words is a ServiceError."""
    for call in calls(module, "abort"):
        plain = (len(call.args) == 1 and not call.keywords
                 and isinstance(call.args[0], ast.Constant) and call.args[0].value == 404)
        assert plain, f"{module.name}:{call.lineno}: {ast.unparse(call)}"


def test_every_error_class_is_a_service_error() -> None:
    """The views' own error classes are gone (ApiError, insight's PickError): each refusal is
    a named ServiceError, rendered by the one handler."""
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text())
        names = {node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef)}
        assert "ApiError" not in names, path
    assert issubclass(diagnostics.PickError, ServiceError)
    assert not hasattr(insight, "PickError")


def test_the_board_rule_is_written_once() -> None:
    """Which entries a board shows is spelled in the board module alone."""
    rule = "Submission.visibility == Visibility.PUBLIC.value"  # the rule as SQL
    holders = sorted(str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
                     if rule in p.read_text())
    assert holders == ["services/board.py"]
    assert len(board.shown_where()) == 3
    # The ranking window too: the leaderboard, the rank groups and the version pages rank
    # with board.rank_window.
    ranked = sorted(str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
                    if "func.rank()" in p.read_text())
    assert ranked == ["services/board.py"]


def test_a_board_query_is_checked_in_the_board_module_alone(app: Flask) -> None:
    """The column rules and the query validation live in the board module; the OpenAPI
    description states the board module's own query model, and no other module checks a
    leaderboard query."""
    from situatedqa_server import openapi

    defining = {str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
                for node in ast.walk(ast.parse(p.read_text()))
                if isinstance(node, ast.FunctionDef) and node.name in {
                    "parse_board_query", "query_problems", "check_board_query",
                    "sortable_columns", "columns_of", "described_columns"}}
    assert defining == {"services/board.py"}
    assert "sort=" not in Path(openapi.__file__).read_text().split("def operations")[0]
    with app.app_context():
        operation = next(o for o in openapi.operations()
                         if o.path.endswith("/leaderboards/temp"))
        assert operation.query is board.query_model("temp")


@pytest.mark.parametrize(("query", "strict_fields"), [
    ("page=x", {"page"}), ("order=sideways", {"order"}), ("page=1&page=2", {"page"}),
    ("per_page=0", {"per_page"}), ("hide_baselines=maybe", {"hide_baselines"}),
])
def test_the_api_is_strict_where_the_pages_fall_back(client: FlaskClient, query: str,
                                                      strict_fields: set[str]) -> None:
    """One routine reads both: the API refuses what its description does not allow, naming
    each parameter; the page takes the same query with its defaults."""
    api = client.get(f"/api/v1/leaderboards/temp?{query}")
    assert api.status_code == 400
    assert set(api.get_json()["error"]["details"]["fields"]) == strict_fields
    assert client.get(f"/leaderboards/temp?{query}").status_code == 200


@pytest.mark.parametrize("url", [
    "/leaderboards/nosuch", "/api/v1/leaderboards/nosuch", "/metrics/nosuch",
    "/versions/ranks/nosuch",
])
def test_an_unknown_track_is_one_error_with_one_status(client: FlaskClient, url: str) -> None:
    response = client.get(url)
    assert response.status_code == 404, url
    if url.startswith("/api/"):
        assert response.get_json()["error"]["code"] == "not_found"
    assert "nosuch" in response.get_data(as_text=True)


def test_the_librarys_unknown_track_is_the_servers_one_error(app: Flask) -> None:
    """benchmark.UnknownTrackError reaching a view is answered as UnknownTrack: 404
    not_found, on a page and in the API, never a 500."""
    from benchmark import track_info

    def read_track(track: str) -> str:
        return track_info(track).title

    app.add_url_rule("/api/v1/probe/<track>", view_func=read_track)
    app.add_url_rule("/probe/<track>", "probe_page", view_func=read_track)
    client = app.test_client()
    api = client.get("/api/v1/probe/nosuch")
    assert api.status_code == 404 and api.get_json()["error"]["code"] == "not_found"
    assert "nosuch" in api.get_json()["error"]["message"]
    page = client.get("/probe/nosuch")
    assert page.status_code == 404 and "nosuch" in page.get_data(as_text=True)


def test_a_download_of_an_unknown_track_or_split_names_what_there_is(
        client: FlaskClient) -> None:
    """/data/<track>/<split>/… answers an unknown name with the refusal every other surface
    gives (404, the names there are), as JSON when asked for JSON."""
    for url, named in (("/data/nope/dev/blank.jsonl", "unknown track 'nope'"),
                       ("/data/temp/nope/gold.jsonl", "unknown split 'nope'")):
        response = client.get(url, headers={"Accept": "application/json"})
        assert response.status_code == 404, url
        assert named in response.get_data(as_text=True), url
