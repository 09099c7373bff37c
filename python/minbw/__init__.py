"""minbw: guaranteed minimum bandwidth for OpenStack, end to end."""

__version__ = "0.2.0"
