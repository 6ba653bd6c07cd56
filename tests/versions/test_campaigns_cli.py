"""The campaign commands: annotator role, create, show, export and build (SQLite, PostgreSQL)."""

from __future__ import annotations

import json

from flask import Flask

from benchmark import GoldSet
from situatedqa_server.extensions import db
from situatedqa_server.models import Campaign
from situatedqa_server.services import campaigns

from .conftest import PASSWORD

URL = "https://example.org/evidence"


def invoke(app: Flask, *args: str) -> tuple[int, str]:
    result = app.test_cli_runner().invoke(args=list(args))
    return result.exit_code, result.output


def test_campaign_commands(app: Flask, release_gold: GoldSet) -> None:
    for name in ("ann", "bea", "carl"):
        assert invoke(app, "users", "create", name, "--email", f"{name}@example.org",
                      "--password", PASSWORD)[0] == 0
    assert invoke(app, "users", "annotator", "ann") == (0, "ann is an annotator\n")
    assert invoke(app, "users", "annotator", "bea")[0] == 0
    assert "participant, annotator" in invoke(app, "users", "list")[1]
    # A bad campaign is a one-line error, and nothing is stored.
    code, output = invoke(app, "campaigns", "create", "bad", "--track", "nosuch", "--as-of",
                          "2026-12-01", "--annotators", "ann,bea")
    assert code == 1 and "unknown track 'nosuch'" in output
    code, output = invoke(app, "campaigns", "create", "bad", "--as-of", "2026-12-01",
                          "--annotators", "ann,carl")
    assert code == 1 and "not annotators: ['carl']" in output
    with app.app_context():
        assert campaigns.all_campaigns() == []
    nq_id = release_gold.get("temp", "test").examples[0].id
    code, output = invoke(app, "campaigns", "create", "years", "--kind", "contexts",
                          "--track", "temp", "--as-of", "2026-12-01", "--annotators", "ann",
                          "--annotators", "bea", "--ids", str(nq_id), "--years", "2023-2025")
    assert code == 0 and "3 tasks" in output, output
    with app.app_context():
        campaign = db.session.get(Campaign, 1)
        assert campaign is not None
        for task in campaign.tasks[:2]:
            for annotation in task.annotations:
                campaigns.start(annotation)
                campaigns.submit(annotation, campaigns.validate("answer", ["Tokyo"], URL, None))
    code, output = invoke(app, "campaigns", "show", "1")
    assert code == 0 and "4/6 answers (67%), 2 accepted" in output
    assert "ann × bea: 2 tasks, raw agreement 1.00, Cohen's kappa —" in output
    assert "years" in invoke(app, "campaigns", "list")[1]
    code, output = invoke(app, "campaigns", "export", "1")
    records = [json.loads(line) for line in output.splitlines()]
    # The two new contexts, then the question's other contexts with any_answer rebuilt.
    assert [r["action"] for r in records if "answer" in r] == ["add", "add"]
    assert all(set(r) >= {"any_answer"} and r["action"] == "update"
               for r in records if "answer" not in r)
    code, output = invoke(app, "campaigns", "build", "1", "--name", "years 2023-24")
    assert code == 0 and "built gold version 'years 2023-24'" in output, output
    code, output = invoke(app, "campaigns", "build", "1", "--name", "again")
    assert code == 1 and "already built" in output
