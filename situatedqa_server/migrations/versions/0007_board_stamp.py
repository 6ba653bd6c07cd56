"""board generation stamps: every change to what a leaderboard shows bumps one in its transaction

One row per (track, split) board, plus the row ('*', '*') that every board reads too (a gold
switch or a team rename bumps it). Leaderboard caches are keyed by these numbers, so a
process never serves a board older than the newest committed change, whichever host made it.

Revision ID: 0007_board_stamp
Revises: 0006_ladder_duplicates
Create Date: 2026-12-01 03:00:00

"""
import sqlalchemy as sa
from alembic import op

revision = '0007_board_stamp'
down_revision = '0006_ladder_duplicates'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'board_stamp',
        sa.Column('track', sa.String(length=16), nullable=False),
        sa.Column('split', sa.String(length=8), nullable=False),
        sa.Column('generation', sa.BigInteger(), nullable=False, server_default='0'),
        sa.PrimaryKeyConstraint('track', 'split', name=op.f('pk_board_stamp')),
    )


def downgrade():
    op.drop_table('board_stamp')
