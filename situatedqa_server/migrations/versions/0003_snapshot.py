"""citable leaderboard snapshots

Revision ID: 0003_snapshot
Revises: 0002_rescore_job
Create Date: 2026-12-01 10:00:00

"""
import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision = '0003_snapshot'
down_revision = '0002_rescore_job'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table('snapshot',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('slug', sa.String(length=80), nullable=False),
    sa.Column('track', sa.String(length=16), nullable=False),
    sa.Column('split', sa.String(length=8), nullable=False),
    sa.Column('title', sa.String(length=200), nullable=False),
    sa.Column('note', sa.Text(), nullable=False),
    sa.Column('gold_version_name', sa.String(length=80), nullable=False),
    sa.Column('actor', sa.String(length=80), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.Column('payload', sa.JSON(), nullable=False),
    sa.Column('sha256', sa.String(length=64), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_snapshot')),
    sa.UniqueConstraint('slug', name=op.f('uq_snapshot_slug'))
    )


def downgrade():
    op.drop_table('snapshot')
