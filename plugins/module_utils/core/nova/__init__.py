"""Nova's scheduler, reproduced: the Placement query Nova 34 sends for a server (its request filters and
ResourceRequest), from the flavor, image and ports as Nova's, Glance's and Neutron's APIs show them, the
nova.conf options by Nova's names and the cloud facts the filters look up. Pure: no I/O.

    inputs.py          Server (Flavor, Image, Port), CloudFacts (Aggregate, Subnet, ComputeNode)
    options.py         SchedulerOptions: [scheduler]/[filter_scheduler]/[workarounds] options, Nova's defaults
    fields.py          Nova's enums and the traits it computes or adds
    hardware.py        what Nova makes of hw:*/os:* extra specs and image properties
    request_filter.py  the 14 request filters of ALL_REQUEST_FILTERS
    resource_request.py  ResourceRequest.from_request_spec / resources_from_request_spec → ServerRequest
    scheduler.py       query(server, options, facts) -> NovaQuery
"""
