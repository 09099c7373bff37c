"""Operations: the only callers of I/O (Placement through :mod:`minbw.placement.client`, Neutron and
Nova through openstacksdk). Each reads, asks :mod:`minbw.plan` for the plan, and applies it."""
