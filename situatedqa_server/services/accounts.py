"""Users, teams, password hashing and API tokens."""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Sequence
from datetime import timedelta

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from flask import current_app
from sqlalchemy import bindparam, select
from sqlalchemy.orm import joinedload

from ..extensions import db
from ..inputs import clean_name, name_problem
from ..models import ApiToken, Team, User, utcnow
from .errors import NotFound, ServiceError

MIN_PASSWORD_LENGTH = 15  # NIST SP 800-63B-4 for passwords used without a second factor
MAX_PASSWORD_LENGTH = 256
USERNAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{2,39}$")
TEAM_PATTERN = re.compile(r"^[\w][\w .-]{1,79}$")
EMAIL_PATTERN = re.compile(r"^[^@\s]{1,64}@[^@\s]+\.[^@\s]+$")
TOKEN_PREFIX = "sqa_"


class AccountError(ServiceError):
    """A user's input for an account or team was not acceptable."""

    status = 400
    code = "invalid_account"


class TokenError(ServiceError):
    """A bearer token is missing, unknown, revoked or expired."""

    status = 401

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message, headers={"WWW-Authenticate": 'Bearer error="invalid_token"'})
        self.token_code = code

    @property
    def error_code(self) -> str:
        """Which of the token's problems it is (invalid_token, expired_token, …)."""
        return self.token_code


def password_hasher() -> PasswordHasher:
    """argon2id at OWASP's parameters (19 MiB, t=2, p=1); cheaper only under TESTING."""
    if current_app.config.get("TESTING"):
        return PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1)
    return PasswordHasher(time_cost=2, memory_cost=19 * 1024, parallelism=1)


def hash_password(password: str) -> str:
    """The argon2id hash of a password, after checking its length."""
    if not MIN_PASSWORD_LENGTH <= len(password) <= MAX_PASSWORD_LENGTH:
        raise AccountError(f"the password must have {MIN_PASSWORD_LENGTH} to "
                           f"{MAX_PASSWORD_LENGTH} characters")
    return password_hasher().hash(password)


def authenticate(username: str, password: str) -> User | None:
    """The user with this name and password, or None (same work whichever was wrong)."""
    user = db.session.scalar(select(User).where(User.username == username.strip()))
    hasher = password_hasher()
    if user is None:
        hasher.hash(password)  # as slow as a verify: an unknown name takes the same time
        return None
    if not _verify(hasher, user.password_hash, password):
        return None
    if hasher.check_needs_rehash(user.password_hash):
        user.password_hash = hasher.hash(password)
        db.session.commit()
    return user


def _verify(hasher: PasswordHasher, stored: str, password: str) -> bool:
    try:
        return hasher.verify(stored, password)
    except (VerificationError, InvalidHashError):
        return False


def create_user(username: str, email: str, password: str, *, team_name: str | None = None,
                join_team: bool = False, is_admin: bool = False) -> User:
    """Add a user in a new team (or, for organizers, join an existing one); not committed."""
    if problem := name_problem(username.strip()):
        raise AccountError(f"the user name {problem}")
    username, email = clean_name(username), email.strip().lower()
    if not USERNAME_PATTERN.fullmatch(username):
        raise AccountError("a user name has 3 to 40 letters, digits, '.', '_' or '-'")
    if not EMAIL_PATTERN.fullmatch(email) or len(email) > 254:
        raise AccountError("enter a valid email address")
    if db.session.scalar(select(User.id).where(
            (User.username == username) | (User.email == email))) is not None:
        raise AccountError("that user name or email is already registered")
    team = _team_for(team_name or username, join_team)
    user = User(username=username, email=email, password_hash=hash_password(password),
                team=team, is_admin=is_admin)
    db.session.add(user)
    return user


def _team_for(name: str, join: bool) -> Team:
    if problem := name_problem(name):
        raise AccountError(f"the team name {problem}")
    name = clean_name(name)
    if not TEAM_PATTERN.fullmatch(name):
        raise AccountError("a team name has 2 to 80 letters, digits, spaces, '.', '_' or '-'")
    team = db.session.scalar(select(Team).where(Team.name == name))
    if team is not None and not join:
        # Joining a team is an organizer's decision; otherwise anyone could use its quota.
        raise AccountError(f"the team name {name!r} is taken")
    return team or Team(name=name)


def end_sessions(user: User) -> None:
    """Void every session of the user signed so far (not committed): the generation moves on."""
    user.session_generation = User.session_generation + 1


def change_password(user: User, current: str, new: str) -> None:
    """Set a new password after checking the current one, ending every session (not committed)."""
    if not _verify(password_hasher(), user.password_hash, current):
        raise AccountError("the current password is not right")
    user.password_hash = hash_password(new)
    end_sessions(user)
    db.session.flush()
    db.session.refresh(user, ["session_generation"])


def hash_token(raw: str) -> str:
    """SHA-256 of a token: enough for 256 random bits (a slow hash is for passwords)."""
    return hashlib.sha256(raw.encode()).hexdigest()


def create_token(user: User, name: str, lifetime_days: int | None = None) -> tuple[ApiToken, str]:
    """A new token for user (not committed) and its plain text, which is shown only once."""
    days = lifetime_days or current_app.config["TOKEN_LIFETIME_DAYS"]
    raw = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken(user=user, name=name.strip()[:80] or "token", token_hash=hash_token(raw),
                     prefix=raw[: len(TOKEN_PREFIX) + 6],
                     expires_at=utcnow() + timedelta(days=days))
    db.session.add(token)
    return token, raw


#: The owner and the team come in the same round trip (every API request asks for them);
#: built once, as building it cost more than running it.
_TOKEN = select(ApiToken).options(joinedload(ApiToken.user).joinedload(User.team)).where(
    ApiToken.token_hash == bindparam("token_hash"))


def user_for_token(raw: str) -> User:
    """The owner of a valid bearer token; TokenError says why a token is refused."""
    token = db.session.scalar(_TOKEN, {"token_hash": hash_token(raw)})
    if token is None:
        raise TokenError("invalid_token", "unknown API token")
    if token.revoked_at is not None:
        raise TokenError("token_revoked", "this API token was revoked")
    if token.expires_at <= utcnow():
        raise TokenError("token_expired", "this API token has expired")
    return token.user


def tokens_of(user: User) -> Sequence[ApiToken]:
    """A user's API tokens, newest first (revoked and expired ones too)."""
    return db.session.scalars(select(ApiToken).where(ApiToken.user_id == user.id)
                              .order_by(ApiToken.created_at.desc(), ApiToken.id.desc())).all()


class NoSuchUser(NotFound):
    """A request named an account that does not exist."""


def user_named(username: str) -> User:
    """The account with this username; NoSuchUser otherwise."""
    user = db.session.scalar(select(User).where(User.username == username))
    if user is None:
        raise NoSuchUser(f"no user named {username!r}")
    return user


def revoke_token(token: ApiToken) -> None:
    """Mark a token revoked (not committed); revoking twice keeps the first time."""
    token.revoked_at = token.revoked_at or utcnow()
