"""Hostile request bodies answer 400, never 500, on every kind of route (in process).

The same requests go to a real gunicorn in tests/scaleout/test_hostile.py.
"""

from __future__ import annotations

import pytest
from flask.testing import FlaskClient

from benchmark.limits import MAX_JSON_DEPTH

ROUTES = ["/api/v1/submissions", "/", "/auth/login"]
NAMELESS = b"--X\r\nContent-Disposition: form-data\r\n\r\nv\r\n--X--\r\n"


@pytest.mark.parametrize("route", ROUTES)
def test_a_multipart_part_without_a_name_is_a_400(client: FlaskClient, route: str) -> None:
    response = client.post(route, data=NAMELESS,
                           content_type="multipart/form-data; boundary=X")
    assert response.status_code == 400
    if route.startswith("/api/"):
        error = response.json["error"]
        assert error["code"] == "invalid_request"
        assert "part without a name" in error["message"]


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 1_000, 10**6])
def test_a_deeply_nested_json_body_is_a_400(client: FlaskClient, route: str, depth: int) -> None:
    response = client.post(route, data=b"[" * depth + b"]" * depth,
                           content_type="application/json")
    assert response.status_code == 400
    if route.startswith("/api/"):
        assert response.json["error"]["code"] == "invalid_json"


def test_a_json_body_within_the_depth_is_read(client: FlaskClient) -> None:
    # Read and checked as before (a control character in it is named), not refused for depth.
    body = b"[" * MAX_JSON_DEPTH + b'"\\u0001"' + b"]" * MAX_JSON_DEPTH
    response = client.post("/api/v1/submissions", data=body, content_type="application/json")
    assert response.status_code == 400
    assert response.json["error"]["code"] == "invalid_request"
