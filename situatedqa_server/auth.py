"""Register, log in and out, the account page and API tokens; login_required for pages."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from flask import (
    Blueprint,
    abort,
    flash,
    g,
    redirect,
    render_template,
    request,
    session,
    url_for,
)
from flask_wtf.csrf import CSRFError
from werkzeug.wrappers import Response

from .errors import render_error, session_lost
from .extensions import config_limit, db, limiter
from .forms import ActionForm, LoginForm, PasswordForm, RegisterForm, TokenForm
from .models import ApiToken, User, utcnow
from .ratelimits import fail_closed
from .services import accounts

bp = Blueprint("auth", __name__, url_prefix="/auth")
#: Why a page asks to log in, by endpoint; other pages get the generic reason.
LOGIN_REASONS = {"submissions.upload": "Log in to upload."}
#: What a browser ignores or trims in a URL: tabs and newlines anywhere, C0 and space at the ends.
URL_IGNORED = re.compile(r"[\t\n\r]")
URL_TRIMMED = "".join(map(chr, range(0x21)))
#: Most characters of typed form fields kept in the session cookie across a new login.
DRAFT_LIMIT = 1500
SESSION_EXPIRED = "Your session expired; log in again."


def login_required(view: Callable[..., Any]) -> Callable[..., Any]:
    """Redirect anonymous visitors to the login page, saying why (and keeping a posted form)."""
    @functools.wraps(view)
    def wrapped(**kwargs: Any) -> Any:
        if g.user is None:
            if request.method == "POST":  # the session ended while the form was open
                save_draft()
                flash(SESSION_EXPIRED, "error")
            else:
                flash(LOGIN_REASONS.get(request.endpoint or "", "Log in to see this page."),
                      "info")
            return redirect(url_for("auth.login", next=request.path))
        return view(**kwargs)
    return wrapped


def admin_required(view: Callable[..., Any]) -> Callable[..., Any]:
    """Organizers only; others get 404 so the pages' existence is not advertised."""
    @functools.wraps(view)
    def wrapped(**kwargs: Any) -> Any:
        if g.user is None or not g.user.is_admin:
            abort(404)
        return view(**kwargs)
    return wrapped


@bp.before_app_request
def load_logged_in_user() -> None:
    """Put the session's user (or None) on g.user; sessions of an older generation are void."""
    user_id = session.get("user_id")
    user = db.session.get(User, user_id) if isinstance(user_id, int) else None
    if user is not None and session.get("generation") != user.session_generation:
        session.clear()  # a logout or password change since this cookie was signed
        user = None
    g.user = user


def _safe_next(target: str | None) -> str:
    """Only same-origin paths after login, read as a browser reads them: no open redirect."""
    # '/\t/evil.example' and '/\\evil.example' are '//evil.example' to a browser.
    cleaned = URL_IGNORED.sub("", target or "").strip(URL_TRIMMED).replace("\\", "/")
    parts = urlsplit(cleaned)
    if (cleaned.startswith("/") and not cleaned.startswith("//")
            and not parts.scheme and not parts.netloc):
        return cleaned
    return url_for("index")


def save_draft() -> None:
    """Keep a posted form's text fields (never passwords) so the form can be refilled."""
    if request.headers.get("Sec-Fetch-Site", "same-origin") not in ("same-origin", "none") or (
            request.origin not in (None, request.host_url.rstrip("/"))):
        return  # another site must not plant text in this site's forms
    # A multipart part without a name is kept under None by Werkzeug: not a form field.
    fields = {k: v for k, v in request.form.items()
              if isinstance(k, str) and k != "csrf_token" and "password" not in k}
    while fields and len(json.dumps(fields)) > DRAFT_LIMIT:
        del fields[max(fields, key=lambda k: len(fields[k]))]
    if fields:
        session["draft"] = {"path": request.path, "fields": fields}


@bp.app_errorhandler(CSRFError)
def csrf_failed(error: CSRFError) -> tuple[Any, int]:
    """A form posted after its session ended gets the login page; other CSRF failures the
    one error shape."""
    if session_lost():
        return expired_session_page()
    return render_error(error)


def expired_session_page() -> tuple[str, int]:
    """The login page for a form posted after its session ended; what was typed is kept."""
    save_draft()
    flash(SESSION_EXPIRED, "error")
    return render_template("auth/login.html", form=LoginForm(formdata=None),
                           action=url_for("auth.login", next=request.path)), 400


def _start_session(user: User) -> None:
    # A fresh session on login: a session id planted earlier is worthless (no fixation).
    draft = session.get("draft")  # only typed form text, to refill the form after login
    session.clear()
    if draft:
        session["draft"] = draft
    session.permanent = True
    session["user_id"] = user.id
    session["generation"] = user.session_generation


@bp.route("/register", methods=("GET", "POST"))
@limiter.limit(config_limit("REGISTER_RATE_LIMIT"), methods=["POST"])
@fail_closed
def register() -> Any:
    """Create an account in a new team, then log in."""
    form = RegisterForm()
    if form.validate_on_submit():
        try:
            user = accounts.create_user(form.username.data, form.email.data,
                                        form.password.data, team_name=form.team.data or None)
        except accounts.AccountError as exc:  # the form again, saying why
            db.session.rollback()
            flash(exc.message, "error")
            return render_template("auth/register.html", form=form), exc.http_status
        db.session.commit()
        _start_session(user)
        flash("Your account was created. Next: create an API token below, or upload "
              "predictions on the upload page.", "info")
        return redirect(url_for("auth.account"))
    return render_template("auth/register.html", form=form), 400 if form.errors else 200


@bp.route("/login", methods=("GET", "POST"))
@limiter.limit(config_limit("LOGIN_RATE_LIMIT"), methods=["POST"])
@fail_closed
def login() -> Any:
    """Log in with user name and password."""
    form = LoginForm()
    if form.validate_on_submit():
        user = accounts.authenticate(form.username.data, form.password.data)
        if user is None:
            flash("wrong user name or password", "error")
            return render_template("auth/login.html", form=form), 401
        _start_session(user)
        return redirect(_safe_next(request.args.get("next")))
    return render_template("auth/login.html", form=form), 400 if form.errors else 200


@bp.post("/logout")
def logout() -> Response:
    """End this and every other session of the user (POST with a CSRF token, never GET)."""
    if g.user is not None:
        accounts.end_sessions(g.user)
        db.session.commit()
    session.clear()
    return redirect(url_for("index"))


def _account_page(new_token: str | None = None,
                  password_form: PasswordForm | None = None) -> str:
    """The account page, with a just-created token shown once."""
    tokens = accounts.tokens_of(g.user)
    return render_template("auth/account.html", tokens=tokens, form=TokenForm(formdata=None),
                           action=ActionForm(), new_token=new_token, now=utcnow(),
                           password_form=password_form or PasswordForm(formdata=None))


@bp.get("/account")
@login_required
def account() -> str:
    """The user's team, tokens and a form for a new token."""
    return _account_page()


@bp.post("/tokens")
@login_required
def create_token() -> Any:
    """Create an API token and show it once."""
    form = TokenForm()
    if not form.validate_on_submit():
        flash("give the token a name", "error")
        return redirect(url_for("auth.account"))
    _, raw = accounts.create_token(g.user, form.name.data)
    db.session.commit()
    return _account_page(new_token=raw)


@bp.post("/tokens/<int:token_id>/revoke")
@login_required
def revoke_token(token_id: int) -> Response:
    """Revoke one of the user's own tokens."""
    token = db.session.get(ApiToken, token_id)
    if token is None or token.user_id != g.user.id:
        abort(404)
    accounts.revoke_token(token)
    db.session.commit()
    flash(f"token {token.prefix}… revoked", "info")
    return redirect(url_for("auth.account"))


@bp.post("/password")
@login_required
@limiter.limit(config_limit("LOGIN_RATE_LIMIT"))
@fail_closed
def change_password() -> Any:
    """Change the password; every other session of the user ends."""
    form = PasswordForm()
    if not form.validate_on_submit():
        return _account_page(password_form=form), 400
    try:
        accounts.change_password(g.user, form.current_password.data, form.new_password.data)
    except accounts.AccountError as exc:  # the form again, saying why
        db.session.rollback()
        flash(exc.message, "error")
        return _account_page(password_form=form), exc.http_status
    db.session.commit()
    _start_session(g.user)
    flash("Password changed; every other session was logged out.", "info")
    return redirect(url_for("auth.account"))
