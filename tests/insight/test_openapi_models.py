"""The API description is generated from the typed models and the track declarations."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from flask_wtf.file import FileRequired
from wtforms.fields.core import UnboundField
from wtforms.validators import DataRequired, Length

from benchmark import TRACK_INFO, GoldSet
from situatedqa_server import openapi
from situatedqa_server.forms import SubmissionForm

from .conftest import api_upload, new_token, register


def sort_parameter(document: dict[str, Any], track: str) -> dict[str, Any]:
    """The sort parameter of a track's leaderboard."""
    operation = document["paths"][f"/api/v1/leaderboards/{track}"]["get"]
    found: dict[str, Any] = next(p for p in operation["parameters"] if p["name"] == "sort")
    return found


def test_a_metric_declared_on_a_track_is_sortable_in_the_description(
        app: Flask, monkeypatch: pytest.MonkeyPatch) -> None:
    """Declaring a metric on a track (benchmark/tracks.py: EM on a new, labelled partition)
    is all it takes: its column and its lenient twins appear in the sort enum of every split,
    no other track changes."""
    info = TRACK_INFO["temp"]
    monkeypatch.setitem(TRACK_INFO, "temp", dataclasses.replace(
        info, metrics=(*info.metrics, "em_new"), partitions=(*info.partitions, "new"),
        partition_labels={**info.partition_labels, "new": "New"}))
    with app.test_request_context():
        document = openapi.spec()
    sort = sort_parameter(document, "temp")
    assert {"em_new", "em_equiv_new", "f1_new"} <= set(sort["schema"]["enum"])
    assert all("em_new" in columns for columns in sort["x-columns-by-split"].values())
    assert "em_new" not in sort_parameter(document, "geo")["schema"]["enum"]


def test_description_is_openapi_31_from_the_models(client: FlaskClient) -> None:
    """3.1, and each body schema is pydantic's schema of its model (nothing written by hand)."""
    document = client.get("/api/v1/openapi.json").json
    assert document["openapi"] == "3.1.0"
    schemas = document["components"]["schemas"]
    for model in (openapi.Submission, openapi.Leaderboard, openapi.Quota, openapi.Error):
        generated = model.model_json_schema(ref_template=openapi.SCHEMAS, mode="serialization")
        generated.pop("$defs", None)
        assert schemas[model.__name__] == generated
    upload = document["paths"]["/api/v1/submissions"]["post"]["requestBody"]
    assert upload["content"]["multipart/form-data"]["schema"] == {
        "$ref": "#/components/schemas/Upload"}
    assert schemas["Upload"]["required"] == ["track", "split", "file", "method_name"]


def test_responses_and_errors_fit_their_models(client: FlaskClient,
                                               release_gold: GoldSet) -> None:
    """A real upload's 201 body is a Submission and a 404 is an Error (no extra keys)."""
    register(client, "modeller")
    token = new_token(client)
    created = api_upload(client, token, release_gold.get("geo", "dev"))
    assert created.status_code == 201
    submission = openapi.Submission.model_validate(created.json)
    assert submission.id == created.json["id"] and submission.track == "geo"
    missing = client.get("/api/v1/submissions/999999")
    assert missing.status_code == 404
    assert openapi.Error.model_validate(missing.json).error.code == "not_found"
    with pytest.raises(ValueError, match="extra"):
        openapi.Submission.model_validate({**created.json, "surprise": 1})


def test_upload_schema_agrees_with_the_form_that_checks_uploads() -> None:
    """The documented upload fields are the form's: names, required ones, length caps (or a
    tighter pattern) and choices; the form validates, so the schema must promise no other."""
    schema = openapi.Upload.model_json_schema(ref_template=openapi.SCHEMAS)
    documented = {name: openapi.plain(prop, schema.get("$defs", {}))
                  for name, prop in schema["properties"].items()}
    fields = {name: value for name, value in vars(SubmissionForm).items()
              if isinstance(value, UnboundField)}
    assert set(documented) == set(fields)
    validators = {name: field.kwargs.get("validators", []) for name, field in fields.items()}
    required = {name for name, checks in validators.items()
                if any(isinstance(v, DataRequired | FileRequired) for v in checks)}
    # track and split are choices with a default on the page; the API needs them sent.
    assert set(schema["required"]) == required | {"track", "split"}
    for name, checks in validators.items():
        for cap in (v.max for v in checks if isinstance(v, Length)):
            assert documented[name].get("maxLength", cap) == cap, name
            assert "maxLength" in documented[name] or "pattern" in documented[name], name
    for name, field in fields.items():
        if "choices" in field.kwargs:
            choices = field.kwargs["choices"]  # the track field reads the registry when used
            choices = choices() if callable(choices) else choices
            assert documented[name]["enum"] == [c.value for c in choices], name
