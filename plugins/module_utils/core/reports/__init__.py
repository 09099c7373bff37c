"""Read-only: the pure analyses (capacity, guarantee, drift, write verification, move checks, cache check,
candidates) and the readers (providers with usage, what the agents report, why there is no valid host)."""
