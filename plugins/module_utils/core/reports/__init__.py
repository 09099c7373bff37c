"""Read-only reports over Placement: provider trees with usage, candidates, why there is no valid host."""
