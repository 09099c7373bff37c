"""The reports' readers: what Placement and Neutron hold, read for the analyses of :mod:`minbw.reports` (providers
with usage and the provider cache's trust, what the agents report, why there is no valid host)."""
