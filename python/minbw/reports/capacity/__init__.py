"""How many more servers of one shape fit: per host, per physnet, in total. Pure: no I/O.

``request`` says what one server is (:func:`request.capacity_request`), ``solver`` counts how many fit on one
host (:func:`solver.fit_on_tree`) and ``report`` does it for every host of a listing (:func:`report.count_capacity`).

Input: what :meth:`minbw.placement.client.Placement.provider_details` reads (each provider with its
parent and root, traits, inventories and usages) and a :class:`CapacityRequest` (a
:class:`~minbw.model.requests.ServerRequest`, plus which port groups leave their network open).

The rule, per host (one provider tree):

1. **One inventory.** For an amount ``a`` of class ``rc`` on a provider: ``capacity = int((total -
   reserved) * allocation_ratio)``, ``free = capacity - used``; the provider can take ``a`` at all only
   if ``min_unit <= a <= max_unit`` and ``a % step_size == 0`` (Placement's own checks), and then
   ``free // a`` times.
2. **One server, the ways to place it.** Every way Placement could place one server on the host: each
   numbered (port) group on one provider that has its required traits (and any-of traits, and none
   of its forbidden ones) and every class it asks for within the units above; each class of the
   unsuffixed (flavor) group on one provider with that class, the providers used together having the
   group's traits (Placement's rule for the unsuffixed group in a tree); then ``group_policy=isolate``
   (numbered groups on distinct providers), every ``same_subtree`` (one of the providers is an
   ancestor of the others), and, where groups share a provider (``group_policy=none``), the summed
   amount within ``max_unit``. Ways that use the same amounts of the same inventories are one way.
3. **Many servers.** Each server takes one of the ways, independently of the others (each is its own
   consumer, with its own candidate). ``fits`` is the largest number of whole servers whose amounts,
   summed per inventory, stay within ``free``: an integer optimum, the best first-fit packing when it
   reaches the bounds, else a MIP solved by HiGHS (:mod:`mip`) started from it. With one way it is simply
   ``min(free // a)`` over the inventories it uses; with several ways that do not compete (say one port and two
   bridges on the physnet), the bridges add up.
4. **Placement's choices.** Claims are made one by one, each taking a candidate Placement offers. When
   ways compete for providers (two ports of different sizes on two bridges, a port that fits a bridge
   or an SR-IOV PF, ``isolate``), where the earlier servers landed can leave room that no later server
   can use. ``first_fit`` is the fewest servers reached when each claim takes the first way that still
   fits, over every order of the ways (up to 6 ways; over rotations beyond that); when it is below
   ``fits`` a note says so.

``limited_by`` names what runs out first: the inventories whose bound equals ``fits`` (``copies``),
e.g. ``MEMORY_MB`` of the root, or ``NET_BW_EGR_KILOBIT_PER_SEC`` of two bridges together; or, when
no way exists, why (traits, units).

Sharing providers (``MISC_SHARES_VIA_AGGREGATE``): a tree also draws from every sharing provider with an
aggregate in common (:func:`report.trees`); hosts drawing from the same ones are packed together for the
totals (:func:`solver.fit_together`), since each host's own count assumes the shared inventory is all its own.

Physnets: the networks of a host are the ``CUSTOM_PHYSNET_*`` traits (and
``CUSTOM_NETWORK_TUNNEL_PROVIDER``) of its providers. A port whose network is left open is counted
once per network of the host (all such ports of a server on that network), and once for the host as a
whole with each such port free to use any of its networks (``required=in:`` over them): the host's
``fits``. ``total`` sums the hosts' ``fits``; each physnet's total sums that physnet's rows.
"""
