"""Placement: the client (the only code that builds a Placement URL), the allocation-candidates
query and the group→provider mapping (both pure)."""
