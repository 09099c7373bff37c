"""The command line on cliff and osc-lib: the ``minbw`` shell and the ``openstack bandwidth`` plugin, over one set of
command classes that call the use cases."""
