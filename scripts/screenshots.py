"""Screenshots of a locally running server for the README ("What you'll see").

Usage, with a server started by `bash scripts/serve.sh` (or any local server):

    .venv/bin/python scripts/screenshots.py [--url http://127.0.0.1:8000] [--out docs/screenshots]
                                            [--no-seed] [--also-mobile]

Unless --no-seed, it first registers two demo teams through the pages and uploads a few dev
predictions made from the published dev gold (each right on a fixed share of examples) over
the API, so the boards have something to show. It then opens the pages in Debian's chromium
(Playwright, /usr/bin/chromium; never a downloaded browser) at 1280x800 and saves PNGs.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import secrets
from pathlib import Path
from typing import Any

import requests

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
PASSWORD = "screenshots are worth a thousand words"
CSRF = re.compile(r'name="csrf_token" type="hidden" value="([^"]+)"')
TOKEN = re.compile(r'<pre id="new-token">([^<]+)</pre>')
#: (team, method, track, rate of right answers, public)
DEMO_UPLOADS = [
    ("Lab A", "Retriever + reader (2018 index)", "temp", 0.42, True),
    ("Lab A", "Closed-book T5", "temp", 0.23, True),
    ("Lab B", "Retriever + reader, query rewriting", "temp", 0.45, True),
    ("Lab A", "TF-IDF tuned", "temp-id", 0.78, True),
    ("Lab B", "Temporal classifier", "temp-id", 0.81, True),
]


def csrf(session: requests.Session, url: str) -> str:
    """The CSRF token of the form on a page."""
    match = CSRF.search(session.get(url, timeout=30).text)
    if match is None:
        raise SystemExit(f"no form on {url}")
    return match.group(1)


def demo_account(base: str, team: str) -> tuple[requests.Session, str]:
    """Register a fresh user in `team` through the pages; return its session and a token."""
    session = requests.Session()
    name = f"demo{secrets.token_hex(3)}"
    response = session.post(f"{base}/auth/register", timeout=30, data={
        "csrf_token": csrf(session, f"{base}/auth/register"), "username": name,
        "email": f"{name}@example.org", "password": PASSWORD, "team": f"{team} {name[-6:]}"})
    response.raise_for_status()
    page = session.post(f"{base}/auth/tokens", timeout=30, data={
        "csrf_token": csrf(session, f"{base}/auth/account"), "name": "screenshots"})
    match = TOKEN.search(page.text)
    if match is None:
        raise SystemExit("could not create an API token")
    return session, match.group(1)


def predictions(gold_lines: list[dict[str, Any]], rate: float, seed: int) -> bytes:
    """Compact JSONL predictions, right on about `rate` of the examples (recent years less)."""
    rng = random.Random(seed)
    lines = []
    for record in gold_lines:
        year = (record.get("context") or {}).get("date", "")[:4]
        decay = 0.15 if year.isdigit() and int(year) >= 2018 else 0.0
        right = rng.random() < rate - decay + (0.1 if not year else 0.0)
        if "label" in record:
            lines.append({"key": record["key"],
                          "label": record["label"] if right else not record["label"]})
        else:
            answer = record["answers"][0] if right and record["answers"] else "no answer"
            lines.append({"key": record["key"], "prediction": answer})
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


def seed(base: str) -> list[int]:
    """Upload the demo submissions over the API; return their ids."""
    accounts = {team: demo_account(base, team) for team in {t for t, *_ in DEMO_UPLOADS}}
    golds: dict[str, list[dict[str, Any]]] = {}
    ids = []
    for index, (team, method, track, rate, public) in enumerate(DEMO_UPLOADS):
        if track not in golds:
            text = requests.get(f"{base}/data/{track}/dev/gold.jsonl", timeout=60).text
            golds[track] = [json.loads(line) for line in text.splitlines() if line]
        _, token = accounts[team]
        response = requests.post(
            f"{base}/api/v1/submissions", timeout=300,
            headers={"Authorization": f"Bearer {token}"},
            data={"track": track, "split": "dev", "method_name": method,
                  "public": "true" if public else "false", "model_type": "retrieval"},
            files={"file": (f"{track}-dev-{index}.jsonl",
                            predictions(golds[track], rate, index))})
        if response.status_code != 201:
            raise SystemExit(f"upload failed: {response.status_code} {response.text[:300]}")
        ids.append(int(response.json()["id"]))
    return ids


def shoot(base: str, out: Path, ids: list[int], mobile: bool) -> list[Path]:
    """Save the README's screenshots (and, with mobile, the same pages at 390x844)."""
    from playwright.sync_api import sync_playwright

    pages = {"leaderboard": "/leaderboards/temp?split=dev",
             "submission": (f"/submissions/{ids[0]}#insight" if ids
                            else "/leaderboards/temp-id?split=dev"),
             "compare": (f"/insight/compare?a={ids[0]}&b={ids[2]}" if len(ids) > 2
                         else "/insight/compare")}
    sizes = [("", 1280, 800)] + ([("-mobile", 390, 844)] if mobile else [])
    saved = []
    out.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            for suffix, width, height in sizes:
                page = browser.new_page(viewport={"width": width, "height": height})
                for name, path in pages.items():
                    page.goto(base + path)
                    page.evaluate("for (const image of document.images) image.loading = 'eager'")
                    page.wait_for_load_state("networkidle")
                    target = out / f"{name}{suffix}.png"
                    page.screenshot(path=str(target), full_page=False)
                    saved.append(target)
                page.close()
        finally:
            browser.close()
    return saved


def main() -> None:
    """Seed (unless --no-seed) and take the screenshots."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--out", type=Path, default=Path("docs/screenshots"))
    parser.add_argument("--no-seed", action="store_true")
    parser.add_argument("--also-mobile", action="store_true")
    args = parser.parse_args()
    base = args.url.rstrip("/")
    ids = [] if args.no_seed else seed(base)
    for path in shoot(base, args.out, ids, args.also_mobile):
        print(path)


if __name__ == "__main__":
    main()
