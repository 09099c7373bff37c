"""The analyses: pure functions from what was read to what it means (capacity, guarantee, drift, write
verification, the checks of a server move, candidates, metrics). :mod:`minbw.readers` reads for them."""
