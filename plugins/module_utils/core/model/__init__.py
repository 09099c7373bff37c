"""Frozen dataclasses for the domain: providers, requests, claims, and Placement microversions by feature.

Pure: no I/O, no imports from the rest of minbw except :mod:`minbw.errors`.
"""
