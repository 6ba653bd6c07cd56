#!/usr/bin/env bash
# Set up a virtualenv, create the SQLite database, import the gold, load the reference
# entries (paper-reported numbers and the identification baselines), and serve.
# Usage: bash scripts/serve.sh        (then open http://127.0.0.1:8000)
# Environment: SITUATEDQA_DATA (a local copy of the release; without it, the release is
#              downloaded at the pinned commit), PORT (default 8000), DATABASE_URL.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3.11}
command -v "$PYTHON" >/dev/null || PYTHON=python3
VENV=${VENV:-.venv}
if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install -q -e '.[classic]'
export PATH="$PWD/$VENV/bin:$PATH"
if [ -z "${SITUATEDQA_DATA:-}" ] && [ ! -d gold/release ]; then
  python -m benchmark fetch
fi
flask --app app db upgrade
flask --app app gold import
flask --app app baselines regenerate --quick
PORT=${PORT:-8000}
echo "SituatedQA evaluation server: open http://127.0.0.1:$PORT"
exec gunicorn --bind "127.0.0.1:$PORT" --workers "${WORKERS:-2}" --access-logfile - app:app
