"""The project's gunicorn settings, read by `gunicorn app:app` from this folder by default.

They live in situatedqa_server/gunicorn_conf.py (workers load the gold and its scoring caches
before their first request, freeze them out of the garbage collector's walks, cap malloc's
arenas and trim freed memory when idle; request-line limits the app answers itself).
"""

from situatedqa_server.gunicorn_conf import *  # noqa: F403  (gunicorn reads module globals)
from situatedqa_server.gunicorn_conf import post_fork, post_worker_init  # noqa: F401
