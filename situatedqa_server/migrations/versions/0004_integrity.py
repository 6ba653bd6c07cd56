"""per-user session generation, so logout and password changes revoke old sessions

Revision ID: 0004_integrity
Revises: 0003_snapshot
Create Date: 2026-12-01 12:00:00

"""
import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision = '0004_integrity'
down_revision = '0003_snapshot'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('user_account', schema=None) as batch_op:
        batch_op.add_column(sa.Column('session_generation', sa.Integer(), nullable=False, server_default='0'))


def downgrade():
    with op.batch_alter_table('user_account', schema=None) as batch_op:
        batch_op.drop_column('session_generation')
