"""disputes: researchers' claims that an example's gold is wrong

One row per author, gold version and example: the proposed answers and evidence, the
organizer's decision (the answers accepted, or a one-line reason the author sees) and the
gold version an accepted dispute went into.

Revision ID: 0012_disputes
Revises: 0011_campaigns
Create Date: 2026-12-02 10:00:00

"""
import sqlalchemy as sa
from alembic import op

revision = '0012_disputes'
down_revision = '0011_campaigns'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'dispute',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('user_id', sa.Integer(), nullable=False),
        sa.Column('version_id', sa.Integer(), nullable=False),
        sa.Column('track', sa.String(length=16), nullable=False),
        sa.Column('split', sa.String(length=8), nullable=False),
        sa.Column('key', sa.String(length=200), nullable=False),
        sa.Column('proposed_answers', sa.JSON(), nullable=False),
        sa.Column('evidence_url', sa.String(length=500), nullable=False),
        sa.Column('comment', sa.Text(), nullable=False),
        sa.Column('status', sa.String(length=16), nullable=False),
        sa.Column('final_answers', sa.JSON(), nullable=True),
        sa.Column('reason', sa.String(length=200), nullable=True),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.Column('decided_at', sa.DateTime(), nullable=True),
        sa.Column('decided_by_id', sa.Integer(), nullable=True),
        sa.Column('gold_version_id', sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(['user_id'], ['user_account.id']),
        sa.ForeignKeyConstraint(['version_id'], ['gold_version.id']),
        sa.ForeignKeyConstraint(['decided_by_id'], ['user_account.id']),
        sa.ForeignKeyConstraint(['gold_version_id'], ['gold_version.id']),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('user_id', 'version_id', 'track', 'split', 'key'),
    )
    op.create_index('ix_dispute_user_id', 'dispute', ['user_id'])
    op.create_index('ix_dispute_status', 'dispute', ['status'])


def downgrade():
    op.drop_index('ix_dispute_status', table_name='dispute')
    op.drop_index('ix_dispute_user_id', table_name='dispute')
    op.drop_table('dispute')
