"""WSGI entry point: `gunicorn app:app`, and `flask --app app …` for organizer commands."""

from situatedqa_server import create_app

app = create_app()
