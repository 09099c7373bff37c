"""The ``minbw`` command."""
