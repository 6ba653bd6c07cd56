"""Register, log in and out, the account page and API tokens; login_required for pages."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

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
from sqlalchemy import select
from werkzeug.wrappers import Response

from .extensions import config_limit, db, limiter
from .forms import ActionForm, LoginForm, RegisterForm, TokenForm
from .models import ApiToken, User, utcnow
from .services import accounts

bp = Blueprint("auth", __name__, url_prefix="/auth")


def login_required(view: Callable[..., Any]) -> Callable[..., Any]:
    """Redirect anonymous visitors to the login page."""
    @functools.wraps(view)
    def wrapped(**kwargs: Any) -> Any:
        if g.user is None:
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
    """Put the session's user (or None) on g.user."""
    user_id = session.get("user_id")
    g.user = db.session.get(User, user_id) if isinstance(user_id, int) else None


def _safe_next(target: str | None) -> str:
    """Only local paths after login: no open redirect."""
    if target and target.startswith("/") and not target.startswith("//"):
        return target
    return url_for("index")


def _start_session(user: User) -> None:
    # A fresh session on login: a session id planted earlier is worthless (no fixation).
    session.clear()
    session.permanent = True
    session["user_id"] = user.id


@bp.route("/register", methods=("GET", "POST"))
@limiter.limit(config_limit("REGISTER_RATE_LIMIT"), methods=["POST"])
def register() -> Any:
    """Create an account in a new team, then log in."""
    form = RegisterForm()
    if form.validate_on_submit():
        try:
            user = accounts.create_user(form.username.data, form.email.data,
                                        form.password.data, team_name=form.team.data or None)
        except accounts.AccountError as exc:
            db.session.rollback()
            flash(str(exc), "error")
            return render_template("auth/register.html", form=form), 400
        db.session.commit()
        _start_session(user)
        return redirect(url_for("auth.account"))
    return render_template("auth/register.html", form=form), 400 if form.errors else 200


@bp.route("/login", methods=("GET", "POST"))
@limiter.limit(config_limit("LOGIN_RATE_LIMIT"), methods=["POST"])
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
    """End the session (POST with a CSRF token: no state change on GET)."""
    session.clear()
    return redirect(url_for("index"))


def _account_page(new_token: str | None = None) -> str:
    """The account page, with a just-created token shown once."""
    tokens = db.session.scalars(select(ApiToken).where(ApiToken.user_id == g.user.id)
                                .order_by(ApiToken.created_at.desc(), ApiToken.id.desc())).all()
    return render_template("auth/account.html", tokens=tokens, form=TokenForm(formdata=None),
                           action=ActionForm(), new_token=new_token, now=utcnow())


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
