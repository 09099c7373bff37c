"""``candidate list``: one GET /allocation_candidates for a server and its QoS ports."""

from __future__ import annotations

from minbw.cli.base import EXIT_NO_VALID_HOST, Command, View
from minbw.cli.options import add_server_arguments, server_spec

COLUMNS = ("#", "host", "request group", "providers")


class ListCandidates(Command):
    """One GET /allocation_candidates for a server and its QoS ports, with which providers serve each request
    group (exit 4 when there is none, with the reason per group)."""

    columns = COLUMNS

    def add_arguments(self, parser):
        add_server_arguments(parser)

    def view(self, parsed_args):
        from minbw.usecases.candidates import candidates

        result = candidates(self.cloud(parsed_args), server_spec(parsed_args))
        head = (f"{result.query}  (microversion {result.candidates.microversion})",)
        if not result.found:
            head += ("No allocation candidates. " + result.summary(),)
        rows = []
        for i, cand in enumerate(result.view, 1):
            host = cand.host_name or "?"
            if cand.mapping is None:
                rows.append((i, host, "-", cand.mapping_problem))
                continue
            for gid, rps in cand.mapping.items():
                rows.append((i, host, gid or "flavor", ", ".join(_provider_names(result, rp) for rp in rps)))
        tail = (
            (
                f"Placement has {len(result.view)} candidate(s) for this request: if Nova still finds no valid host, "
                f"the cause is after Placement, in one of nova-scheduler's host filters (its log says which: "
                f"docs/troubleshooting.md, \"When Placement has candidates\")",
            )
            if result.found
            else ()
        )
        return View(
            result.to_dict(),
            COLUMNS,
            tuple(rows),
            head=head,
            tail=tail,
            show_table=bool(rows),
            exit_code=0 if result.found else EXIT_NO_VALID_HOST,
        )


def _provider_names(result, rp: str) -> str:
    return result.names.get(rp, rp)
