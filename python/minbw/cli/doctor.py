"""``doctor``: the preflight of guaranteed minimum bandwidth, one line per check with what to fix."""

from __future__ import annotations

from minbw.cli.base import EXIT_FINDINGS, Command, View

COLUMNS = ("check", "status", "detail", "fix")


class Doctor(Command):
    """Check what guaranteed minimum bandwidth needs of this cloud: Placement's microversion, Neutron's QoS
    extensions and agents (alive, the qos extension, resources_synced, who writes the providers), Nova's API and
    nova-compute services; what no API shows is listed as skipped with where to look (exit 3 when a check warns or
    fails)."""

    columns = COLUMNS

    def view(self, parsed_args):
        from minbw.usecases.doctor import doctor

        result = doctor(self.cloud(parsed_args))
        rows = tuple((c.name, c.status, c.detail, c.fix) for c in result.checks)
        return View(
            result.to_dict(),
            COLUMNS,
            rows,
            tail=(f"status: {result.status}",),
            exit_code=EXIT_FINDINGS if result.status in ("warn", "fail") else 0,
        )
