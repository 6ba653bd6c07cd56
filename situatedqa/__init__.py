"""Inspect's namespace of the SituatedQA tasks: `inspect eval situatedqa/temp`.

Inspect names a task by the installed package that defines it, so the six tasks are
declared here (situatedqa/tasks.py, registered through the `inspect_ai` entry point); their
code is benchmark.harness.inspect_tasks. Nothing here is imported by the server.
"""
