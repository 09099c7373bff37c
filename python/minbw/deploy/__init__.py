"""Running Placement: the embedded real openstack-placement."""
