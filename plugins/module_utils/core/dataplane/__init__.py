"""What a host's data plane holds, read and never written: the Open vSwitch database (the QoS and Queue rows the
OVS agent writes), OVN's northbound ``Logical_Switch_Port`` QoS options (what ML2/OVN writes), and the kernel's
view through netlink (tc qdiscs and HTB classes, a link's speed, a PF's VF rates).

Through the libraries made for them, installed by the ``dataplane`` extra: ovsdbapp (the real schema, fetched from
the server) and pyroute2. Each module imports its library when it reads, so the room can be imported without them.
"""
