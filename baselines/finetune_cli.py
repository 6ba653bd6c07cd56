"""Placeholder replaced below."""
import click


@click.command()
def finetune() -> None:
    """Fine-tune a checkpoint."""
