"""anti-overfitting: the Ladder's release decision and duplicate predictions on submissions

- shown_submission_id: NULL when the submission's own scores are released; else the
  submission whose released scores stand in for it (SITUATEDQA_TEST_FEEDBACK=ladder).
  A check constraint keeps such a submission private, so no public surface can show it.
- predictions_sha256: SHA-256 of the canonical normalized predictions (see
  services/duplicates.py); unique per team, track and split among live submissions.
- duplicate_of_id: another team's earlier submission with the same predictions.

Existing rows keep NULLs: they were all released, and their predictions are not hashed.

Revision ID: 0006_ladder_duplicates
Revises: 0005_database_storage
Create Date: 2026-12-01 02:45:00

"""
import sqlalchemy as sa
from alembic import op

revision = '0006_ladder_duplicates'
down_revision = '0005_database_storage'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('submission', schema=None) as batch_op:
        batch_op.add_column(sa.Column('predictions_sha256', sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column('shown_submission_id', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('duplicate_of_id', sa.Integer(), nullable=True))
        batch_op.create_foreign_key(batch_op.f('fk_submission_shown_submission_id_submission'),
                                    'submission', ['shown_submission_id'], ['id'])
        batch_op.create_foreign_key(batch_op.f('fk_submission_duplicate_of_id_submission'),
                                    'submission', ['duplicate_of_id'], ['id'])
        batch_op.create_check_constraint(
            'withheld_private', "shown_submission_id IS NULL OR visibility = 'private'")
        batch_op.create_index('ix_submission_predictions', ['track', 'split', 'predictions_sha256'],
                              unique=False)
        batch_op.create_index('uq_submission_team_predictions',
                              ['team_id', 'track', 'split', 'predictions_sha256'], unique=True,
                              sqlite_where=sa.text('deleted_at IS NULL'),
                              postgresql_where=sa.text('deleted_at IS NULL'))


def downgrade():
    with op.batch_alter_table('submission', schema=None) as batch_op:
        batch_op.drop_index('uq_submission_team_predictions')
        batch_op.drop_index('ix_submission_predictions')
        batch_op.drop_constraint('withheld_private', type_='check')
        batch_op.drop_constraint(batch_op.f('fk_submission_duplicate_of_id_submission'),
                                 type_='foreignkey')
        batch_op.drop_constraint(batch_op.f('fk_submission_shown_submission_id_submission'),
                                 type_='foreignkey')
        batch_op.drop_column('duplicate_of_id')
        batch_op.drop_column('shown_submission_id')
        batch_op.drop_column('predictions_sha256')
