"""one source of truth: files and gold versions in the database, jobs in batches, idempotency

Moves an existing deployment's uploaded files (the old SITUATEDQA_SUBMISSIONS_DIR, by
default the repository's submissions/ folder) and gold versions (the old
SITUATEDQA_GOLD_DIR, by default instance/gold, with versions/<id>/ under it) into the
content-addressed stored_file table. A file or folder that a row names but that is
missing stops the migration with its path; nothing is changed then.

Revision ID: 0005_database_storage
Revises: 0004_integrity
Create Date: 2026-12-01 13:00:00

"""
import json
import os
import zlib
from datetime import UTC, datetime
from pathlib import Path

import sqlalchemy as sa
from alembic import op
from flask import current_app

revision = '0005_database_storage'
down_revision = '0004_integrity'
branch_labels = None
depends_on = None

REPO_ROOT = Path(__file__).resolve().parents[3]


def _now():
    return datetime.now(UTC).replace(tzinfo=None)


def _old_folders():
    instance = Path(current_app.instance_path)
    uploads = Path(os.environ.get("SITUATEDQA_SUBMISSIONS_DIR") or REPO_ROOT / "submissions")
    gold = Path(os.environ.get("SITUATEDQA_GOLD_DIR") or instance / "gold")
    return uploads, gold


stored_file = sa.table('stored_file', sa.column('sha256', sa.String), sa.column('size', sa.BigInteger),
                       sa.column('data', sa.LargeBinary), sa.column('created_at', sa.DateTime))


def _put(bind, data, sha256):
    if bind.execute(sa.select(stored_file.c.sha256).where(stored_file.c.sha256 == sha256)).first():
        return
    bind.execute(stored_file.insert().values(sha256=sha256, size=len(data),
                                             data=zlib.compress(data, 6), created_at=_now()))


def _move_uploads(bind, folder):
    import hashlib

    shas = [row[0] for row in bind.execute(sa.text("SELECT DISTINCT file_sha256 FROM submission"))]
    missing = []
    for sha256 in shas:
        path = folder / sha256[:2] / sha256
        if not path.is_file():
            missing.append(str(path))
            continue
        data = path.read_bytes()
        if hashlib.sha256(data).hexdigest() != sha256:
            raise RuntimeError(f"{path}: its bytes do not match its name; restore the file")
        _put(bind, data, sha256)
    if missing:
        raise RuntimeError(
            f"{len(missing)} uploaded file(s) named by submissions are missing, e.g. "
            f"{missing[0]}; set SITUATEDQA_SUBMISSIONS_DIR to the old upload folder")


def _move_gold(bind, folder):
    from benchmark import load_gold
    from situatedqa_server.services.gold_store import serialize

    rows = bind.execute(sa.text("SELECT id, parent_id FROM gold_version ORDER BY id")).all()
    for version_id, parent_id in rows:
        directory = folder if parent_id is None else folder / "versions" / str(version_id)
        if not (directory / "meta.json").is_file():
            raise RuntimeError(f"gold version {version_id}: no canonical gold in {directory}; "
                               "set SITUATEDQA_GOLD_DIR to the old gold folder")
        sha256, data = serialize(load_gold(directory))
        _put(bind, data, sha256)
        changes_file = directory / "changes.json"
        changes = json.loads(changes_file.read_text()) if changes_file.is_file() else []
        bind.execute(sa.text("UPDATE gold_version SET gold_sha256 = :sha, changes = :changes "
                             "WHERE id = :id"),
                     {"sha": sha256, "changes": json.dumps(changes), "id": version_id})


def upgrade():
    op.create_table('stored_file',
    sa.Column('sha256', sa.String(length=64), nullable=False),
    sa.Column('size', sa.BigInteger(), nullable=False),
    sa.Column('data', sa.LargeBinary(), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.PrimaryKeyConstraint('sha256', name=op.f('pk_stored_file'))
    )
    with op.batch_alter_table('gold_version', schema=None) as batch_op:
        batch_op.add_column(sa.Column('gold_sha256', sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column('changes', sa.JSON(), nullable=True))

    bind = op.get_bind()
    uploads, gold = _old_folders()
    _move_uploads(bind, uploads)
    _move_gold(bind, gold)

    with op.batch_alter_table('gold_version', schema=None) as batch_op:
        batch_op.alter_column('gold_sha256', existing_type=sa.String(length=64), nullable=False)
        batch_op.alter_column('changes', existing_type=sa.JSON(), nullable=False)
        batch_op.create_foreign_key(batch_op.f('fk_gold_version_gold_sha256_stored_file'),
                                    'stored_file', ['gold_sha256'], ['sha256'])
    with op.batch_alter_table('submission', schema=None) as batch_op:
        batch_op.create_foreign_key(batch_op.f('fk_submission_file_sha256_stored_file'),
                                    'stored_file', ['file_sha256'], ['sha256'])
        batch_op.create_index(batch_op.f('ix_submission_file_sha256'), ['file_sha256'],
                              unique=False)

    op.create_table('job',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('gold_version_id', sa.Integer(), nullable=True),
    sa.Column('params', sa.JSON(), nullable=False),
    sa.Column('status', sa.String(length=8), nullable=False),
    sa.Column('actor', sa.String(length=80), nullable=False),
    sa.Column('total', sa.Integer(), nullable=False),
    sa.Column('done', sa.Integer(), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.Column('started_at', sa.DateTime(), nullable=True),
    sa.Column('finished_at', sa.DateTime(), nullable=True),
    sa.Column('leased_until', sa.DateTime(), nullable=True),
    sa.Column('error', sa.Text(), nullable=True),
    sa.ForeignKeyConstraint(['gold_version_id'], ['gold_version.id'], name=op.f('fk_job_gold_version_id_gold_version')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_job'))
    )
    with op.batch_alter_table('job', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_job_gold_version_id'), ['gold_version_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_job_status'), ['status'], unique=False)
    # Earlier rescore jobs keep their ids and states; one left "running" by a dead thread is
    # failed, since it has no batches to resume (start the activation again).
    op.execute("INSERT INTO job (id, kind, gold_version_id, params, status, actor, total, done, "
               "created_at, started_at, finished_at, error) SELECT id, 'rescore', "
               "gold_version_id, '{}', CASE WHEN status IN ('queued', 'running') THEN 'failed' "
               "ELSE status END, actor, total, done, created_at, started_at, finished_at, "
               "CASE WHEN status IN ('queued', 'running') THEN 'interrupted before the "
               "migration to job workers; activate again' ELSE error END FROM rescore_job")
    if bind.dialect.name == "postgresql":
        op.execute("SELECT setval(pg_get_serial_sequence('job', 'id'), "
                   "COALESCE((SELECT MAX(id) FROM job), 0) + 1, false)")
    with op.batch_alter_table('rescore_job', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_rescore_job_gold_version_id'))
    op.drop_table('rescore_job')

    op.create_table('job_batch',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('job_id', sa.Integer(), nullable=False),
    sa.Column('seq', sa.Integer(), nullable=False),
    sa.Column('first_id', sa.Integer(), nullable=False),
    sa.Column('last_id', sa.Integer(), nullable=False),
    sa.Column('size', sa.Integer(), nullable=False),
    sa.Column('done', sa.Boolean(), nullable=False),
    sa.Column('attempts', sa.Integer(), nullable=False),
    sa.Column('leased_until', sa.DateTime(), nullable=True),
    sa.Column('finished_at', sa.DateTime(), nullable=True),
    sa.ForeignKeyConstraint(['job_id'], ['job.id'], name=op.f('fk_job_batch_job_id_job')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_job_batch')),
    sa.UniqueConstraint('job_id', 'seq', name=op.f('uq_job_batch_job_id_seq'))
    )
    with op.batch_alter_table('job_batch', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_job_batch_job_id'), ['job_id'], unique=False)

    op.create_table('idempotency_key',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('key', sa.String(length=200), nullable=False),
    sa.Column('request_sha256', sa.String(length=64), nullable=False),
    sa.Column('status', sa.Integer(), nullable=False),
    sa.Column('response', sa.JSON(), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.ForeignKeyConstraint(['user_id'], ['user_account.id'], name=op.f('fk_idempotency_key_user_id_user_account')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_idempotency_key')),
    sa.UniqueConstraint('user_id', 'key', name=op.f('uq_idempotency_key_user_id_key'))
    )
    with op.batch_alter_table('idempotency_key', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_idempotency_key_created_at'), ['created_at'], unique=False)


def _restore_uploads(bind, folder):
    rows = bind.execute(sa.text(
        "SELECT DISTINCT f.sha256, f.data FROM stored_file f "
        "JOIN submission s ON s.file_sha256 = f.sha256")).all()
    for sha256, data in rows:
        path = folder / sha256[:2] / sha256
        if not path.is_file():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(zlib.decompress(data))


def _restore_gold(bind, folder):
    from situatedqa_server.services.gold_store import deserialize

    rows = bind.execute(sa.text(
        "SELECT v.id, v.parent_id, v.changes, f.data FROM gold_version v "
        "JOIN stored_file f ON f.sha256 = v.gold_sha256 ORDER BY v.id")).all()
    for version_id, parent_id, changes, data in rows:
        directory = folder if parent_id is None else folder / "versions" / str(version_id)
        directory.mkdir(parents=True, exist_ok=True)
        deserialize(zlib.decompress(data)).save(directory)
        changes = json.loads(changes) if isinstance(changes, str) else changes
        if changes:
            (directory / "changes.json").write_text(json.dumps(changes, indent=1))


def downgrade():
    # The files go back to the folders the old code read them from (SITUATEDQA_SUBMISSIONS_DIR
    # and SITUATEDQA_GOLD_DIR, as in the upgrade), so the older schema finds them there.
    bind = op.get_bind()
    uploads, gold = _old_folders()
    _restore_uploads(bind, uploads)
    _restore_gold(bind, gold)

    with op.batch_alter_table('idempotency_key', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_idempotency_key_created_at'))
    op.drop_table('idempotency_key')
    with op.batch_alter_table('job_batch', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_job_batch_job_id'))
    op.drop_table('job_batch')

    op.create_table('rescore_job',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('gold_version_id', sa.Integer(), nullable=False),
    sa.Column('status', sa.String(length=8), nullable=False),
    sa.Column('actor', sa.String(length=80), nullable=False),
    sa.Column('total', sa.Integer(), nullable=False),
    sa.Column('done', sa.Integer(), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.Column('started_at', sa.DateTime(), nullable=True),
    sa.Column('finished_at', sa.DateTime(), nullable=True),
    sa.Column('error', sa.Text(), nullable=True),
    sa.ForeignKeyConstraint(['gold_version_id'], ['gold_version.id'], name=op.f('fk_rescore_job_gold_version_id_gold_version')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_rescore_job'))
    )
    with op.batch_alter_table('rescore_job', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_rescore_job_gold_version_id'), ['gold_version_id'], unique=False)
    # Rescore jobs keep their ids and states; other kinds (baseline regeneration) did not
    # exist before this revision and are dropped with the job table.
    op.execute("INSERT INTO rescore_job (id, gold_version_id, status, actor, total, done, "
               "created_at, started_at, finished_at, error) SELECT id, gold_version_id, "
               "status, actor, total, done, created_at, started_at, finished_at, error "
               "FROM job WHERE kind = 'rescore' AND gold_version_id IS NOT NULL")
    if bind.dialect.name == "postgresql":
        op.execute("SELECT setval(pg_get_serial_sequence('rescore_job', 'id'), "
                   "COALESCE((SELECT MAX(id) FROM rescore_job), 0) + 1, false)")
    with op.batch_alter_table('job', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_job_status'))
        batch_op.drop_index(batch_op.f('ix_job_gold_version_id'))
    op.drop_table('job')

    with op.batch_alter_table('submission', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_submission_file_sha256'))
        batch_op.drop_constraint(batch_op.f('fk_submission_file_sha256_stored_file'),
                                 type_='foreignkey')
    with op.batch_alter_table('gold_version', schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f('fk_gold_version_gold_sha256_stored_file'),
                                 type_='foreignkey')
        batch_op.drop_column('changes')
        batch_op.drop_column('gold_sha256')
    op.drop_table('stored_file')
