"""harness metadata: the run an lm-eval samples file or an Inspect log records

The harness, its version, the task, the model, the scorer's fingerprint, the filter and the
per-sample hashes, on submissions made from a harness's file; and the filter the uploader
chose, which reading the file again takes. Both nullable: other files have neither.

Revision ID: 0010_harness_metadata
Revises: 0009_error_classes
Create Date: 2026-12-02 07:00:00

"""
import sqlalchemy as sa
from alembic import op

revision = '0010_harness_metadata'
down_revision = '0009_error_classes'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('submission') as batch:
        batch.add_column(sa.Column('harness', sa.JSON(), nullable=True))
        batch.add_column(sa.Column('harness_hashes', sa.JSON(), nullable=True))
        batch.add_column(sa.Column('harness_filter', sa.String(length=100), nullable=True))


def downgrade():
    with op.batch_alter_table('submission') as batch:
        batch.drop_column('harness_filter')
        batch.drop_column('harness_hashes')
        batch.drop_column('harness')
