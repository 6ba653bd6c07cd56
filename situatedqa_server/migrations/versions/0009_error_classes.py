"""situated error classes: per-example class codes and the knowledge horizon on scores

The error figures themselves are metrics (in score.metrics, ci and counts); the class codes
let a paired comparison and an incremental rescore work without the file, and the horizon
keeps its curve and why it was not determined. errors_pending marks an upload's row whose
error CIs are filled in after its response. Both columns are nullable: rows stored before
are rescored in full, and show no error figures until then.

Revision ID: 0009_error_classes
Revises: 0008_incremental_rescore
Create Date: 2026-12-02 07:00:00

"""
import sqlalchemy as sa
from alembic import op

revision = '0009_error_classes'
down_revision = '0008_incremental_rescore'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('score') as batch:
        batch.add_column(sa.Column('error_classes', sa.LargeBinary(), nullable=True))
        batch.add_column(sa.Column('horizon', sa.JSON(), nullable=True))
        batch.add_column(sa.Column('errors_pending', sa.Boolean(), nullable=False,
                                   server_default=sa.false()))


def downgrade():
    with op.batch_alter_table('score') as batch:
        batch.drop_column('errors_pending')
        batch.drop_column('horizon')
        batch.drop_column('error_classes')
