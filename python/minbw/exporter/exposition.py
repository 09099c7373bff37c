"""The exporter's rendering (pure but for prometheus_client): :mod:`minbw.reports.metrics` families in Prometheus'
text format or OpenMetrics, as prometheus_client renders them, with what did not change kept between renderings
(:class:`Exposition`), and the one family a scrape adds itself: the age of what it serves (:func:`age`)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from minbw.reports import metrics


class _Families:
    """A collector (for prometheus_client's renderers) of :class:`metrics.Family` objects."""

    def __init__(self, families):
        self.families = families

    def collect(self):
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        for f in self.families:
            names = [k for k, _ in f.samples[0][0]] if f.samples else []
            cls = CounterMetricFamily if f.type == "counter" else GaugeMetricFamily
            fam = cls(f.name, f.help, labels=names)
            for labels, value in f.samples:
                fam.add_metric([v for _, v in labels], value)
            yield fam


def _render(families, openmetrics: bool) -> str:
    """``families`` in Prometheus' text format (0.0.4) or OpenMetrics (without its ``# EOF``), by
    prometheus_client."""
    if openmetrics:
        from prometheus_client.openmetrics import exposition

        return exposition.generate_latest(_Families(families)).decode()[: -len("# EOF\n")]
    import prometheus_client

    return prometheus_client.generate_latest(_Families(families)).decode()


def _sample_lines(text: str, keep_lines: bool = False) -> dict:
    """family name → its sample lines (``keep_lines``: as a list, one line per sample), of a rendering of gauges
    (their names are not changed by the format)."""
    out: dict[str, list[str]] = {}
    lines: list[str] = []
    for line in text.split("\n")[:-1]:  # prometheus_client escapes a newline in a label value, no other separator
        line += "\n"
        if line.startswith("# TYPE "):
            lines = out.setdefault(line.split(" ", 3)[2], [])
        elif not line.startswith("#"):
            lines.append(line)
    return out if keep_lines else {name: "".join(ls) for name, ls in out.items()}


# Providers rendered by prometheus_client at once (a sample's line does not depend on the others): the first
# rendering of 40,000 providers (10,000 hosts) holds one batch's samples, text and lines at a time, not all of them.
RENDER_AT_ONCE = 2000


class Exposition:
    """The exporter's families rendered by prometheus_client and kept: a family whose samples did not change is
    not rendered again, and the families of the providers are rendered per provider (each provider's lines kept
    while its samples are the same), so a scrape after a few providers moved renders only theirs."""

    def __init__(self):
        self._families: dict[tuple[bool, str], tuple[metrics.Family, str]] = {}
        self._headers: dict[tuple[bool, metrics.Family], str] = {}
        self._providers: dict[tuple[bool, str], tuple[tuple, dict[str, str]]] = {}
        self.rendered = {"families": 0, "providers": 0}  # rendered, all told (tests, benchmarks)

    def render(self, families, parts: Mapping[str, tuple] | None = None, *, openmetrics: bool = False) -> str:
        """``families`` (:meth:`Exporter.scrape`); ``parts``: provider → its own samples
        (:attr:`metrics.ProviderFamilies.parts`), whose families are rendered provider by provider. Returns the
        body (OpenMetrics with its ``# EOF``); raises what prometheus_client raises for a malformed family."""
        out = list(self.pieces(families, parts, openmetrics=openmetrics))
        if openmetrics:
            out.append("# EOF\n")
        return "".join(out)

    def pieces(self, families, parts: Mapping[str, tuple] | None = None, *, openmetrics: bool = False) -> Iterator[str]:
        """:meth:`render`'s body (without OpenMetrics' ``# EOF``) as the pieces it is made of, in order: the
        providers that are new or changed rendered first, then the kept renderings yielded one by one, so that a
        caller that encodes or compresses as it goes never holds the whole body as text. Raises as
        :meth:`render`."""
        parts = parts or {}
        per_provider = {name for own in parts.values() for name, _, _ in own}
        self._render_providers(openmetrics, parts)
        lines = {u: self._providers[(openmetrics, u)][1] for u in parts}
        self._forget(parts)
        for f in families:
            if f.name in per_provider:
                yield self._header(openmetrics, f)
                for u in parts:
                    yield lines[u].get(f.name, "")
            else:
                yield self._family(openmetrics, f)

    def _family(self, openmetrics: bool, f) -> str:
        kept = self._families.get((openmetrics, f.name))
        if kept is None or (kept[0] is not f and kept[0] != f):
            kept = self._families[(openmetrics, f.name)] = (f, _render([f], openmetrics))
            self.rendered["families"] += 1
        return kept[1]

    def _header(self, openmetrics: bool, f) -> str:
        key = (openmetrics, metrics.Family(f.name, f.type, f.help))
        if key not in self._headers:
            self._headers[key] = _render([key[1]], openmetrics)
        return self._headers[key]

    def _render_providers(self, openmetrics: bool, parts: Mapping[str, tuple]) -> None:
        """Render the providers whose samples are new or changed, all in one rendering (a family's samples in
        the providers' order, one line each), and keep each one's lines."""
        todo = [
            (u, own)
            for u, own in parts.items()
            if (kept := self._providers.get((openmetrics, u))) is None or (kept[0] is not own and kept[0] != own)
        ]
        for start in range(0, len(todo), RENDER_AT_ONCE):
            end = start + RENDER_AT_ONCE
            self._render_some(openmetrics, todo[start:end])
        self.rendered["providers"] += len(todo)

    def _render_some(self, openmetrics: bool, todo: list[tuple[str, tuple]]) -> None:
        by_name: dict[str, list] = {}
        for _, own in todo:
            for name, labels, value in own:
                by_name.setdefault(name, []).append((labels, value))
        text = _sample_lines(
            _render([metrics.Family(n, "gauge", "-", tuple(samples)) for n, samples in by_name.items()], openmetrics),
            keep_lines=True,
        )
        del by_name
        taken = {name: 0 for name in text}
        for u, own in todo:
            counts: dict[str, int] = {}
            for name, _, _ in own:
                counts[name] = counts.get(name, 0) + 1
            mine = {}
            for name, k in counts.items():
                first, end = taken[name], taken[name] + k
                mine[name] = "".join(text[name][first:end])
                taken[name] += k
            self._providers[(openmetrics, u)] = (own, mine)

    def _forget(self, parts: Mapping[str, tuple]) -> None:
        """Drop the lines of providers gone (the exporter runs for months)."""
        if len(self._providers) > 2 * len(parts) + 100:
            self._providers = {k: v for k, v in self._providers.items() if k[1] in parts}


AGE = metrics.Family(
    metrics.PREFIX + "collection_age_seconds",
    "gauge",
    "Seconds since the collection this scrape serves ended (the scrape never waits for Placement)",
)


def age(seconds: float, openmetrics: bool) -> str:
    """The age of what a scrape serves, rendered (one small family, per scrape)."""
    return _render([metrics.Family(AGE.name, AGE.type, AGE.help, (((), max(0.0, seconds)),))], openmetrics)
