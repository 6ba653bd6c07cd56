#!/usr/bin/env bash
# Set up a virtualenv, create the SQLite database, import the gold, load the reference
# entries (paper-reported numbers and the identification baselines), and serve.
# Usage: bash scripts/serve.sh        (then open http://127.0.0.1:8000)
# Environment: SITUATEDQA_DATA (a local copy of the release; without it, the release is
#              downloaded at the pinned commit), PORT (default 8000), DATABASE_URL,
#              SITUATEDQA_BROKER_URL (default: the embedded broker in instance/).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3.11}
command -v "$PYTHON" >/dev/null || PYTHON=python3
VENV=${VENV:-.venv}
case "$VENV" in /*) ;; *) VENV="$PWD/$VENV" ;; esac
if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install -q -e '.[classic]'
export PATH="$VENV/bin:$PATH"
if [ -z "${SITUATEDQA_DATA:-}" ] && [ ! -d gold/release ]; then
  python -m benchmark fetch
fi
flask --app app db upgrade
flask --app app gold import
flask --app app baselines regenerate --quick
PORT=${PORT:-8000}
# One job worker beside the server (rescoring, regeneration): with no SITUATEDQA_BROKER_URL
# it uses the embedded SQLite broker in instance/, so no other server is needed. It stops
# with the server; a job it leaves unfinished resumes when it starts again.
flask --app app jobs worker --loglevel WARNING &
worker=$!
trap 'kill "$worker" 2>/dev/null; wait "$worker" 2>/dev/null' EXIT INT TERM
echo "SituatedQA evaluation server: open http://127.0.0.1:$PORT (Ctrl-C stops it)"
# gunicorn reads ./gunicorn.conf.py (the project's settings): each worker loads the gold and its scoring caches before
# its first request; 4 threads a worker; request-line limits the app answers itself.
gunicorn --bind "127.0.0.1:$PORT" \
  --workers "${WORKERS:-2}" --access-logfile - app:app
