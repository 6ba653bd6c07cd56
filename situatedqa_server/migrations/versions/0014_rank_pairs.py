"""rank pairs: the rank groups' pairwise decisions, stored

One row per pair of neighbouring score rows and number of resamples: whether their paired
bootstrap test joins them in one rank group. Deleted with either score row.

Revision ID: 0014_rank_pairs
Revises: 0013_sort_metrics
Create Date: 2026-12-02 22:30:00

"""
import sqlalchemy as sa
from alembic import op

revision = '0014_rank_pairs'
down_revision = '0013_sort_metrics'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'rank_pair',
        sa.Column('above_score_id', sa.Integer(), nullable=False),
        sa.Column('below_score_id', sa.Integer(), nullable=False),
        sa.Column('resamples', sa.Integer(), nullable=False),
        sa.Column('joined', sa.Boolean(), nullable=False),
        sa.ForeignKeyConstraint(['above_score_id'], ['score.id'], ondelete='CASCADE'),
        sa.ForeignKeyConstraint(['below_score_id'], ['score.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('above_score_id', 'below_score_id', 'resamples'),
    )
    op.create_index('ix_rank_pair_below', 'rank_pair', ['below_score_id'])


def downgrade():
    op.drop_index('ix_rank_pair_below', table_name='rank_pair')
    op.drop_table('rank_pair')
