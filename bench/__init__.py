"""minbw benchmarks: ``python bench/run.py`` (``make bench``). Results are written up in docs/benchmarks.md."""
