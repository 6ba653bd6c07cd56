"""incremental rescoring: per-example token F1 on scores, the parsed predictions on submissions

A gold update re-evaluates only the examples it changed: the parent score's outcome codes
and F1 carry over for the others, and the changed ones are read from the stored predictions
instead of the uploaded file. Both columns are nullable: older rows are rescored in full.

Revision ID: 0008_incremental_rescore
Revises: 0007_board_stamp
Create Date: 2026-12-01 09:00:00

"""
import sqlalchemy as sa
from alembic import op

revision = '0008_incremental_rescore'
down_revision = '0007_board_stamp'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('score') as batch:
        batch.add_column(sa.Column('f1', sa.LargeBinary(), nullable=True))
    with op.batch_alter_table('submission') as batch:
        batch.add_column(sa.Column('predictions', sa.LargeBinary(), nullable=True))


def downgrade():
    with op.batch_alter_table('submission') as batch:
        batch.drop_column('predictions')
    with op.batch_alter_table('score') as batch:
        batch.drop_column('f1')
