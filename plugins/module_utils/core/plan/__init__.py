"""Plans: desired state + what is there → the writes, in order, and the state they lead to. Pure.

Every plan is a :class:`minbw.plan.base.Plan`: check mode shows it, diff mode shows its
``diff()``, and the real run applies exactly its ops (in :mod:`minbw.ops`).
"""
