"""campaigns: annotation campaigns, their tasks and the annotators' blind responses

The annotator role on accounts; a campaign (what to annotate, as of when, built from which
version and into which); its tasks (an example's key, question, context and last known
answer, and the accepted or adjudicated response); and each annotator's response.

Revision ID: 0011_campaigns
Revises: 0010_harness_metadata
Create Date: 2026-12-02 08:00:00

"""
import sqlalchemy as sa
from alembic import op

revision = '0011_campaigns'
down_revision = '0010_harness_metadata'
branch_labels = None
depends_on = None


def upgrade():
    # A plain ADD COLUMN, not a batch: on SQLite a batch recreates user_account, and
    # dropping the old table fails on a deployment whose rows other tables reference.
    op.add_column('user_account', sa.Column('is_annotator', sa.Boolean(), nullable=False,
                                            server_default=sa.false()))
    op.create_table(
        'campaign',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('name', sa.String(length=80), nullable=False),
        sa.Column('kind', sa.String(length=16), nullable=False),
        sa.Column('track', sa.String(length=16), nullable=False),
        sa.Column('split', sa.String(length=8), nullable=False),
        sa.Column('as_of', sa.Date(), nullable=False),
        sa.Column('note', sa.Text(), nullable=False),
        sa.Column('parent_version_id', sa.Integer(), nullable=False),
        sa.Column('created_by_id', sa.Integer(), nullable=True),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.Column('gold_version_id', sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(['parent_version_id'], ['gold_version.id']),
        sa.ForeignKeyConstraint(['created_by_id'], ['user_account.id']),
        sa.ForeignKeyConstraint(['gold_version_id'], ['gold_version.id']),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('name'),
    )
    op.create_table(
        'campaign_task',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('campaign_id', sa.Integer(), nullable=False),
        sa.Column('key', sa.String(length=200), nullable=False),
        sa.Column('nq_id', sa.BigInteger(), nullable=False),
        sa.Column('question', sa.Text(), nullable=False),
        sa.Column('context', sa.JSON(), nullable=False),
        sa.Column('partitions', sa.JSON(), nullable=False),
        sa.Column('last_answers', sa.JSON(), nullable=False),
        sa.Column('last_date', sa.String(length=40), nullable=True),
        sa.Column('status', sa.String(length=16), nullable=False),
        sa.Column('final_kind', sa.String(length=20), nullable=True),
        sa.Column('final_answers', sa.JSON(), nullable=True),
        sa.Column('final_evidence', sa.String(length=500), nullable=True),
        sa.Column('final_date', sa.String(length=10), nullable=True),
        sa.Column('adjudicator_id', sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(['campaign_id'], ['campaign.id']),
        sa.ForeignKeyConstraint(['adjudicator_id'], ['user_account.id']),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('campaign_id', 'key'),
    )
    op.create_index('ix_campaign_task_campaign_id', 'campaign_task', ['campaign_id'])
    op.create_index('ix_campaign_task_status', 'campaign_task', ['status'])
    op.create_table(
        'annotation',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('task_id', sa.Integer(), nullable=False),
        sa.Column('slot', sa.Integer(), nullable=False),
        sa.Column('annotator_id', sa.Integer(), nullable=False),
        sa.Column('kind', sa.String(length=20), nullable=True),
        sa.Column('answers', sa.JSON(), nullable=False),
        sa.Column('evidence_url', sa.String(length=500), nullable=True),
        sa.Column('effective_date', sa.String(length=10), nullable=True),
        sa.Column('started_at', sa.DateTime(), nullable=True),
        sa.Column('submitted_at', sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(['task_id'], ['campaign_task.id']),
        sa.ForeignKeyConstraint(['annotator_id'], ['user_account.id']),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('task_id', 'slot'),
        sa.UniqueConstraint('task_id', 'annotator_id'),
    )
    op.create_index('ix_annotation_task_id', 'annotation', ['task_id'])
    op.create_index('ix_annotation_annotator_id', 'annotation', ['annotator_id'])


def downgrade():
    op.drop_index('ix_annotation_annotator_id', table_name='annotation')
    op.drop_index('ix_annotation_task_id', table_name='annotation')
    op.drop_table('annotation')
    op.drop_index('ix_campaign_task_status', table_name='campaign_task')
    op.drop_index('ix_campaign_task_campaign_id', table_name='campaign_task')
    op.drop_table('campaign_task')
    op.drop_table('campaign')
    if op.get_bind().dialect.name == 'sqlite':  # SQLite 3.35+ drops a column in place
        op.execute('ALTER TABLE user_account DROP COLUMN is_annotator')
    else:
        op.drop_column('user_account', 'is_annotator')
