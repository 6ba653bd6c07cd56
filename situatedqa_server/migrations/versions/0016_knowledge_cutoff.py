"""knowledge cutoff: the date a submission declares its model's knowledge stops

A nullable date on submission (benchmark.cutoff reads the examples whose answer took effect
after it); submissions stored before it declare none.

Revision ID: 0016_knowledge_cutoff
Revises: 0015_input_releases
Create Date: 2026-12-11 10:00:00

"""
import sqlalchemy as sa
from alembic import op

revision = '0016_knowledge_cutoff'
down_revision = '0015_input_releases'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('submission') as batch:
        batch.add_column(sa.Column('knowledge_cutoff', sa.Date(), nullable=True))


def downgrade():
    with op.batch_alter_table('submission') as batch:
        batch.drop_column('knowledge_cutoff')
