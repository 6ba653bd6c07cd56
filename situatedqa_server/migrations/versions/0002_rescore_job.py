"""rescore jobs of gold versions

Revision ID: 0002_rescore_job
Revises: 0001
Create Date: 2026-11-30 20:30:00

"""
import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision = '0002_rescore_job'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table('rescore_job',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('gold_version_id', sa.Integer(), nullable=False),
    sa.Column('status', sa.String(length=8), nullable=False),
    sa.Column('actor', sa.String(length=80), nullable=False),
    sa.Column('total', sa.Integer(), nullable=False),
    sa.Column('done', sa.Integer(), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.Column('started_at', sa.DateTime(), nullable=True),
    sa.Column('finished_at', sa.DateTime(), nullable=True),
    sa.Column('error', sa.Text(), nullable=True),
    sa.ForeignKeyConstraint(['gold_version_id'], ['gold_version.id'], name=op.f('fk_rescore_job_gold_version_id_gold_version')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_rescore_job'))
    )
    with op.batch_alter_table('rescore_job', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_rescore_job_gold_version_id'), ['gold_version_id'], unique=False)


def downgrade():
    with op.batch_alter_table('rescore_job', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_rescore_job_gold_version_id'))

    op.drop_table('rescore_job')
