"""Neutron's knowledge, reproduced: agent configuration, provider names and trees, QoS rules, port
requests, neutron-server options. Pure: no I/O (the tests compare with neutron-lib and Neutron)."""
