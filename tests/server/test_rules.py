"""The metadata rules (rules.py) are the form's and the API description's alike."""

from __future__ import annotations

import io
import itertools
import re
from datetime import date
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmark import GoldSet, GoldSplit
from benchmark.tracks import PROVENANCE_METRICS
from situatedqa_server import rules
from situatedqa_server.forms import parse_knowledge_date, parse_parameter_count

from .conftest import new_token, prediction_file, register


def _is_date(text: str) -> bool:
    year, _, rest = text.partition("-")
    month, _, day = rest.partition("-")
    try:
        date(int(year), int(month or 1), int(day or 1))
    except ValueError:
        return False
    return True


def _shaped(years: Any) -> Any:
    for year in years:
        yield f"{year:04d}"
        for month in range(14):
            yield f"{year:04d}-{month:02d}"
            for day in range(33):
                yield f"{year:04d}-{month:02d}-{day:02d}"


def test_the_date_pattern_is_the_calendar() -> None:
    years = [0, 1, 4, 100, 400, 1000, 1900, 1996, 2000, 2019, 2020, 2021, 2100, 9996, 9999]
    texts = itertools.chain(_shaped(years), (f"{y:04d}-02-29" for y in range(10_000)),
                            (f"{y:04d}" for y in range(10_000)))
    for text in texts:
        assert (rules.KNOWLEDGE_DATE.fullmatch(text) is not None) == _is_date(text), text


@pytest.mark.parametrize("text", ["0000", "0000-01", "2021-02-29", "2021-04-31", "1900-02-29"])
def test_dates_not_in_the_calendar_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="not a date in the calendar"):
        parse_knowledge_date(text)


def test_the_parameter_pattern_is_what_the_form_accepts() -> None:
    pattern = re.compile(rules.PARAMETER_COUNT_PATTERN)
    mantissas = ["0", "00", "1", "01", "9", "10", "999", "1000", "1001", "999999",
                 "1000000", "1000001", "999999999", "1000000000", "1000000000001",
                 "999999999999999", "1000000000000000", "1000000000000001", "0" * 20 + "7"]
    for mantissa, unit in itertools.product(mantissas, ["", "k", "K", "m", "M", "b", "B", "t",
                                                       "T"]):
        text = mantissa + unit
        try:
            accepted = parse_parameter_count(text) is not None
        except ValueError:
            accepted = False
        assert (pattern.fullmatch(text) is not None) == accepted, text


@settings(max_examples=300, deadline=None)
@given(text=st.from_regex(rules.PARAMETER_COUNT_PATTERN, fullmatch=True).filter(
    lambda t: len(t) <= rules.MAX_PARAMETER_TEXT))
def test_every_count_the_schema_allows_is_accepted(text: str) -> None:
    count = parse_parameter_count(text)
    assert count is not None and rules.MIN_PARAMETERS <= count <= rules.MAX_PARAMETERS


@settings(max_examples=300, deadline=None)
@given(text=st.from_regex(rules.KNOWLEDGE_DATE_PATTERN, fullmatch=True))
def test_every_date_the_schema_allows_is_accepted(text: str) -> None:
    assert parse_knowledge_date(text) == text


def _spec_property(client: FlaskClient, name: str) -> dict[str, Any]:
    spec = client.get("/api/v1/openapi.json").json
    found: dict[str, Any] = spec["components"]["schemas"]["Upload"]["properties"][name]
    return found


def test_the_description_states_the_rules(client: FlaskClient) -> None:
    assert _spec_property(client, "knowledge_date")["pattern"] == rules.KNOWLEDGE_DATE_PATTERN
    count = _spec_property(client, "parameter_count")
    assert count["pattern"] == rules.PARAMETER_COUNT_PATTERN
    assert count["maxLength"] == rules.MAX_PARAMETER_TEXT


@pytest.mark.parametrize(("field", "value"), [("knowledge_date", "0000"),
                                              ("parameter_count", "0")])
def test_values_the_schema_refuses_are_refused(app: Flask, release_gold: GoldSet,
                                               field: str, value: str) -> None:
    pattern = _spec_property(app.test_client(), field)["pattern"]
    assert re.fullmatch(pattern, value) is None
    client = app.test_client()
    register(client, "alice")
    gold = release_gold.get("geo", "dev")
    response = _upload(client, new_token(client), gold, **{field: value})
    assert response.status_code == 400
    assert field in response.json["error"]["details"]["fields"]


def _upload(client: FlaskClient, token: str, gold: GoldSplit, **fields: str) -> Any:
    form: dict[str, Any] = {"track": gold.track, "split": gold.split, "method_name": "m",
                            **fields}
    form["file"] = (io.BytesIO(prediction_file(gold, 3)), "p.jsonl")
    return client.post("/api/v1/submissions", data=form, content_type="multipart/form-data",
                       headers={"Authorization": f"Bearer {token}"})


def test_every_sort_column_the_schema_allows_is_accepted(client: FlaskClient) -> None:
    spec = client.get("/api/v1/openapi.json").json
    for path, operations in spec["paths"].items():
        if not path.startswith("/api/v1/leaderboards/"):
            continue
        parameters = {p["name"]: p for p in operations["get"]["parameters"]}
        sort = parameters["sort"]
        for split in parameters["split"]["schema"]["enum"]:
            for column in sort["schema"]["enum"]:
                response = client.get(f"{path}?split={split}&sort={column}")
                assert response.status_code == 200, (path, split, column)
            # A column of this split only: outside the schema, accepted on its split.
            for column in set(sort["x-columns-by-split"][split]) - set(sort["schema"]["enum"]):
                assert client.get(f"{path}?split={split}&sort={column}").status_code == 200
            others = {c for cs in sort["x-columns-by-split"].values() for c in cs}
            for column in others - set(sort["x-columns-by-split"][split]):
                assert client.get(f"{path}?split={split}&sort={column}").status_code == 400


def test_temp_id_sorts_by_a_source_only_where_it_has_it(client: FlaskClient) -> None:
    spec = client.get("/api/v1/openapi.json").json
    sort = {p["name"]: p for p in spec["paths"]["/api/v1/leaderboards/temp-id"]["get"][
        "parameters"]}["sort"]
    by_split = sort["x-columns-by-split"]
    only_some = {c for cs in by_split.values() for c in cs} - set(sort["schema"]["enum"])
    # e.g. f1_tydi: one split's source; and the test split's provenance figures
    assert any(c.startswith("f1_") for c in only_some), by_split
    assert all(c.startswith("f1_") or c in PROVENANCE_METRICS for c in only_some)


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(knowledge_date=st.from_regex(rules.KNOWLEDGE_DATE_PATTERN, fullmatch=True),
       parameter_count=st.from_regex(rules.PARAMETER_COUNT_PATTERN, fullmatch=True).filter(
           lambda t: len(t) <= rules.MAX_PARAMETER_TEXT))
def test_an_upload_with_any_schema_valid_metadata_is_stored(
        uploader: dict[str, Any], knowledge_date: str, parameter_count: str) -> None:
    uploader["count"] += 1
    gold = uploader["gold"]
    form: dict[str, Any] = {"track": gold.track, "split": gold.split, "method_name": "m",
                            "knowledge_date": knowledge_date, "parameter_count": parameter_count}
    # Other predictions each time: the same ones twice would be refused as a duplicate.
    data = prediction_file(gold, 3, wrong=f"wrong {uploader['count']}")
    form["file"] = (io.BytesIO(data), "p.jsonl")
    response = uploader["client"].post(
        "/api/v1/submissions", data=form, content_type="multipart/form-data",
        headers={"Authorization": f"Bearer {uploader['token']}"})
    assert response.status_code == 201, response.get_data(as_text=True)
    assert response.json["knowledge_date"] == knowledge_date
    assert response.json["parameter_count"] == parse_parameter_count(parameter_count)


@pytest.fixture
def uploader(app: Flask, release_gold: GoldSet) -> dict[str, Any]:
    client = app.test_client()
    register(client, "meta")
    return {"client": client, "token": new_token(client), "count": 0,
            "gold": release_gold.get("geo", "dev")}
