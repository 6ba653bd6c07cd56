#!/usr/bin/env python
"""The boosting attack on test feedback (Blum & Hardt, ICML 2015), through the HTTP API.

On the temp-id test split it submits k random label files, keeps the files whose own
released F1 beats the first file's, and submits their majority vote. Random labels know
nothing, so the true gain is zero; what the attack *sees* is the released F1 of the vote
minus that of the first file. With SITUATEDQA_TEST_FEEDBACK=full the seen gain is pure
overfitting to the test labels; with ladder the server releases a file's F1 only when it
is significantly better than the team's best, and the seen gain stays near zero.

THIS SCRIPT READS THE HIDDEN GOLD: only to measure, offline, the score of the files against
the test labels and the true score. It may do so only because it runs beside a test server
that the organizer controls (--local starts one per mode on a throwaway SQLite database,
with the quota lifted). The attack itself uses nothing but the example keys (public inputs)
and the server's answers.

Three scores per file, all F1 in percent:
- seen: what the server released for it (the attack's only view);
- test: offline against the test labels (what publishing it would show);
- true: offline against the test labels shuffled (a fresh draw of labels with the same
  positive rate), averaged over shuffles: the expected score of a file that carries no
  knowledge, i.e. its score on new examples from the same distribution.

Usage:
  python scripts/attack_boosting.py --local [--k 200] [--seed 0] [--data DIR] [--json OUT]
  python scripts/attack_boosting.py --url URL --token TOKEN [--data DIR] [--k 200]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmark import GoldSplit, import_release
from benchmark.metrics import confusion_codes, id_f1

TRACK, SPLIT = "temp-id", "test"
Labels = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class Feedback:
    """The server's answer to one upload: the released F1 and whether it is the file's own."""

    f1: float
    released: bool
    submission_id: int


#: Uploads one label file (in gold order) and returns the server's feedback.
Submit = Callable[[Labels], Feedback]


@dataclass
class Attack:
    """What the attack submitted and saw."""

    first: Labels
    vote: Labels
    first_seen: Feedback
    vote_seen: Feedback
    kept: int
    released: int
    submitted: int
    feedback: list[Feedback] = field(default_factory=list)


def random_labels(rng: np.random.Generator, n: int) -> Labels:
    """A label file of fair coin flips."""
    return rng.random(n) < 0.5


def majority_vote(files: list[Labels], rng: np.random.Generator) -> Labels:
    """Per example, the label most of the files give (ties: a coin flip)."""
    twice = 2 * np.sum(np.stack(files), axis=0)
    coin = rng.random(twice.size) < 0.5
    return np.asarray((twice > len(files)) | ((twice == len(files)) & coin), dtype=np.bool_)


def run_attack(submit: Submit, n: int, k: int, rng: np.random.Generator) -> Attack:
    """k random files, the vote of those whose own released F1 beats the first, submitted.

    A file the server did not release (the Ladder showed another file's F1) is never kept:
    the attacker knows that number is not its own. A vote equal to a file already sent is
    not sent again (the server would answer 409 with that file's id).
    """
    seen: dict[bytes, Feedback] = {}

    def send(labels: Labels) -> Feedback:
        key = np.packbits(labels).tobytes()
        if key not in seen:
            seen[key] = submit(labels)
        return seen[key]

    first = random_labels(rng, n)
    first_seen = send(first)
    kept: list[Labels] = []
    feedback = [first_seen]
    for _ in range(k - 1):
        labels = random_labels(rng, n)
        answer = send(labels)
        feedback.append(answer)
        if answer.released and answer.f1 > first_seen.f1:
            kept.append(labels)
    vote = majority_vote(kept, rng) if kept else first
    vote_seen = send(vote)
    return Attack(first, vote, first_seen, vote_seen, kept=len(kept),
                  released=sum(f.released for f in feedback), submitted=len(seen),
                  feedback=feedback)


def f1(predicted: Labels, gold: Labels) -> float:
    """F1 in percent of the positive (context-dependent) class."""
    counts = np.bincount(confusion_codes(predicted, gold), minlength=4).astype(np.int64)
    return float(id_f1(counts))


def true_f1(predicted: Labels, gold: Labels, rng: np.random.Generator,
            shuffles: int = 200) -> float:
    """Mean F1 against shuffled gold labels: the score on a fresh draw of the labels."""
    return float(np.mean([f1(predicted, rng.permutation(gold)) for _ in range(shuffles)]))


@dataclass(frozen=True)
class Report:
    """Seen, test and true F1 of the first file and the vote, and the gains."""

    mode: str
    k: int
    submitted: int
    released: int
    kept: int
    first: dict[str, float]
    vote: dict[str, float]
    gain: dict[str, float]


def report(mode: str, k: int, attack: Attack, gold: Labels, seed: int) -> Report:
    """The three scores of the first file and of the vote (see the module docstring)."""
    first = {"seen": attack.first_seen.f1, "test": f1(attack.first, gold),
             "true": true_f1(attack.first, gold, np.random.default_rng(seed))}
    vote = {"seen": attack.vote_seen.f1, "test": f1(attack.vote, gold),
            "true": true_f1(attack.vote, gold, np.random.default_rng(seed))}
    return Report(mode, k, attack.submitted, attack.released, attack.kept, first, vote,
                  {name: vote[name] - first[name] for name in first})


# --- talking to the server -----------------------------------------------------------------


def jsonl(keys: tuple[str, ...], labels: Labels) -> bytes:
    """A prediction file in JSONL: one {"key", "label"} per example."""
    return "".join(json.dumps({"key": key, "label": bool(label)}) + "\n"
                   for key, label in zip(keys, labels, strict=True)).encode()


def feedback_of(body: dict[str, Any]) -> Feedback:
    """Feedback from the API's 201 body (metrics are the released ones)."""
    return Feedback(f1=float(body["metrics"][body["primary_metric"]]),
                    released=bool(body.get("released", True)), submission_id=int(body["id"]))


def http_submit(url: str, token: str, keys: tuple[str, ...]) -> Submit:
    """A Submit that POSTs to /api/v1/submissions of a running server."""
    import requests

    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {token}"

    def submit(labels: Labels) -> Feedback:
        response = session.post(
            f"{url.rstrip('/')}/api/v1/submissions",
            data={"track": TRACK, "split": SPLIT, "method_name": "boosting attack"},
            files={"file": ("labels.jsonl", jsonl(keys, labels))}, timeout=120)
        if response.status_code != 201:
            raise RuntimeError(f"upload refused: {response.status_code} {response.text[:300]}")
        return feedback_of(response.json())
    return submit


@contextmanager
def local_server(mode: str, data: Path, folder: Path) -> Iterator[tuple[str, str]]:
    """A throwaway server (werkzeug thread, SQLite in folder, quota lifted): (url, token)."""
    from flask_migrate import upgrade
    from werkzeug.serving import make_server

    from situatedqa_server import create_app
    from situatedqa_server.extensions import db
    from situatedqa_server.services import accounts, gold_store

    folder.mkdir(parents=True, exist_ok=True)
    app = create_app({
        "SECRET_KEY": "attack-test-server", "SQLALCHEMY_DATABASE_URI":
            f"sqlite:///{folder / 'attack.sqlite'}", "INSTANCE_DIR": str(folder),
        "CACHE_DIR": str(folder / "cache"), "JOBS_EAGER": True, "TEST_FEEDBACK": mode,
        "TEST_DAILY_QUOTA": 10**6, "TEST_TOTAL_QUOTA": 10**6,
        "UPLOAD_RATE_LIMIT": "1000000 per minute", "SESSION_COOKIE_SECURE": False})
    with app.app_context():
        upgrade(directory=app.extensions["migrate"].directory)
        gold_store.register_first_version(import_release(data))
        user = accounts.create_user("attacker", "attacker@example.org", os.urandom(16).hex())
        _, token = accounts.create_token(user, "attack")
        db.session.commit()
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no line per upload
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", token
    finally:
        server.shutdown()
        thread.join(timeout=10)


def test_split(data: Path) -> GoldSplit:
    """The temp-id test split of the release (the hidden gold: see the module docstring)."""
    return import_release(data).get(TRACK, SPLIT)


def print_report(item: Report) -> None:
    """One block of text per mode."""
    print(f"mode={item.mode}: {item.submitted} files submitted, {item.released} released, "
          f"{item.kept} kept for the vote")
    for name in ("seen", "test", "true"):
        print(f"  {name:>4} F1: first {item.first[name]:6.2f}  vote {item.vote[name]:6.2f}  "
              f"gain {item.gain[name]:+6.2f}")


def main(argv: list[str] | None = None) -> int:
    """Run the attack in each mode (--local) or against one running server."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--local", action="store_true",
                        help="start a throwaway server per mode (full, ladder)")
    parser.add_argument("--url", help="a running test server (with --token)")
    parser.add_argument("--token", help="API token of a team on that server")
    parser.add_argument("--mode", default="?", help="label of the --url server's mode")
    parser.add_argument("--data", type=Path, default=Path(os.environ.get(
        "SITUATEDQA_DATA", "gold/release")), help="the release folder (the gold)")
    parser.add_argument("--k", type=int, default=200, help="random files (default 200)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="also write the reports here")
    args = parser.parse_args(argv)
    if not args.local and not (args.url and args.token):
        parser.error("give --local, or --url and --token")
    gold = test_split(args.data)
    keys = tuple(example.key for example in gold.examples)
    reports = []
    targets = ["full", "ladder"] if args.local else [args.mode]
    for mode in targets:
        rng = np.random.default_rng(args.seed)  # the same random files in every mode
        if args.local:
            with tempfile.TemporaryDirectory() as folder, \
                    local_server(mode, args.data, Path(folder)) as (url, token):
                attack = run_attack(http_submit(url, token, keys), len(gold), args.k, rng)
        else:
            attack = run_attack(http_submit(args.url, args.token, keys), len(gold),
                                args.k, rng)
        reports.append(report(mode, args.k, attack, gold.labels, args.seed))
        print_report(reports[-1])
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in reports], indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
