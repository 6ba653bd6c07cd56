"""input releases: the inputs of the test examples a gold version added, published by date

One row per release (the version that made it, its publication date, its keys, counts
and blank files' digests), and one per (submission, release) the submission answered.

Revision ID: 0015_input_releases
Revises: 0014_rank_pairs
Create Date: 2026-12-10 10:00:00

"""
import sqlalchemy as sa
from alembic import op

revision = '0015_input_releases'
down_revision = '0014_rank_pairs'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'input_release',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('name', sa.String(length=80), nullable=False),
        sa.Column('gold_version_id', sa.Integer(), nullable=False),
        sa.Column('release_on', sa.Date(), nullable=False),
        sa.Column('keys', sa.JSON(), nullable=False),
        sa.Column('counts', sa.JSON(), nullable=False),
        sa.Column('blank_sha256', sa.JSON(), nullable=False),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(['gold_version_id'], ['gold_version.id']),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('gold_version_id'),
        sa.UniqueConstraint('name'),
    )
    op.create_index('ix_input_release_release_on', 'input_release', ['release_on'])
    op.create_table(
        'submission_release',
        sa.Column('submission_id', sa.Integer(), nullable=False),
        sa.Column('input_release_id', sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(['submission_id'], ['submission.id'], ondelete='CASCADE'),
        sa.ForeignKeyConstraint(['input_release_id'], ['input_release.id']),
        sa.PrimaryKeyConstraint('submission_id', 'input_release_id'),
    )
    op.create_index('ix_submission_release_input_release_id', 'submission_release',
                    ['input_release_id'])


def downgrade():
    op.drop_index('ix_submission_release_input_release_id', table_name='submission_release')
    op.drop_table('submission_release')
    op.drop_index('ix_input_release_release_on', table_name='input_release')
    op.drop_table('input_release')
