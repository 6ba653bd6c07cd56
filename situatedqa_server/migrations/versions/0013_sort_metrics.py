"""sort metrics: the score's metrics as the database stores them for sorting

A generated column computed from score.metrics, jsonb on PostgreSQL (json on SQLite), that
boards sorted by a metric read: a sort by a jsonb value reads it parsed, where a json value
is parsed again for every row. SQLite cannot add a stored generated column to a table, so
the batch recreates the table there (PostgreSQL adds the column in place and fills it).

Revision ID: 0013_sort_metrics
Revises: 0012_disputes
Create Date: 2026-12-02 22:00:00

"""
import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = '0013_sort_metrics'
down_revision = '0012_disputes'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('score', recreate='always' if _sqlite() else 'auto') as batch:
        batch.add_column(sa.Column(
            'sort_metrics', sa.JSON().with_variant(postgresql.JSONB(), 'postgresql'),
            sa.Computed('metrics', persisted=True), nullable=True))


def downgrade():
    with op.batch_alter_table('score') as batch:
        batch.drop_column('sort_metrics')


def _sqlite():
    return op.get_bind().dialect.name == 'sqlite'
