"""The exporter's rendering (pure but for prometheus_client): :mod:`minbw.reports.metrics` families in Prometheus'
text format or OpenMetrics, as prometheus_client renders them, with what did not change kept between renderings
(:class:`Exposition`), and the one family a scrape adds itself: the age of what it serves (:func:`age`)."""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence

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


def _escaped(value: str) -> str:
    """A label's value as prometheus_client escapes it (both formats: backslash, newline, double quote)."""
    if "\\" in value or "\n" in value or '"' in value:
        return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r'\"')
    return value


def _provider_lines(name: str, parts: Sequence[tuple]) -> Iterator[str]:
    """The sample lines of the family ``name`` of the providers of ``parts`` (:func:`metrics.provider_part`), in
    their order, as prometheus_client renders a gauge's samples (the same line in both formats: the names are
    legal, the labels sorted), :data:`RENDER_AT_ONCE` providers joined at a time."""
    from prometheus_client.utils import floatToGoString

    for start in range(0, len(parts), RENDER_AT_ONCE):
        lines = []
        for classes, host, provider, physnet, vnics, values in parts[start : start + RENDER_AT_ONCE]:
            columns = metrics.part_columns(classes, name)
            if not columns:
                continue
            tail = (
                f'",host="{_escaped(host)}",physnet="{_escaped(physnet)}",provider="{_escaped(provider)}"'
                f',vnic_types="{_escaped(vnics)}"}} '
            )
            lines += [f'{name}{{direction="{direction}{tail}{floatToGoString(values[k])}\n' for direction, k in columns]
        yield "".join(lines)


# Providers whose lines are joined into one piece of the body (a sample's line does not depend on the others).
RENDER_AT_ONCE = 2000


class Exposition:
    """The exporter's families rendered: a family whose samples did not change is not rendered again (by
    prometheus_client), and the families of the providers' own samples are rendered at each publication from the
    providers' parts (:class:`metrics.ProviderFamilies`), line by line, nothing of them kept."""

    def __init__(self):
        self._families: dict[tuple[bool, str], tuple[metrics.Family, str]] = {}
        self._headers: dict[tuple[bool, metrics.Family], str] = {}
        self.rendered = {"families": 0}  # rendered by prometheus_client, all told (tests, benchmarks)

    def render(self, families, parts: Sequence[tuple] = (), *, openmetrics: bool = False) -> str:
        """``families`` (:meth:`Exporter.scrape`); ``parts``: each provider's own samples
        (:attr:`metrics.ProviderFamilies.parts`), whose families are rendered from them. Returns the body
        (OpenMetrics with its ``# EOF``); raises what prometheus_client raises for a malformed family."""
        out = list(self.pieces(families, parts, openmetrics=openmetrics))
        if openmetrics:
            out.append("# EOF\n")
        return "".join(out)

    def pieces(self, families, parts: Sequence[tuple] = (), *, openmetrics: bool = False) -> Iterator[str]:
        """:meth:`render`'s body (without OpenMetrics' ``# EOF``) as the pieces it is made of, in order, so that a
        caller that encodes or compresses as it goes never holds the whole body as text. Raises as
        :meth:`render`."""
        parts = parts or ()
        per_provider = metrics.part_families(parts)
        for f in families:
            if f.name in per_provider:
                yield self._header(openmetrics, f)
                yield from _provider_lines(f.name, parts)
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


AGE = metrics.Family(
    metrics.PREFIX + "collection_age_seconds",
    "gauge",
    "Seconds since the collection this scrape serves ended (the scrape never waits for Placement)",
)


def _age_rendered(seconds: float, openmetrics: bool) -> str:
    """:func:`age` as prometheus_client renders the family (what :func:`age` must equal)."""
    return _render([metrics.Family(AGE.name, AGE.type, AGE.help, (((), max(0.0, seconds)),))], openmetrics)


@functools.lru_cache(maxsize=2)
def _age_head(openmetrics: bool) -> str:
    """The age family's ``# HELP`` and ``# TYPE`` lines in the format, as prometheus_client renders them."""
    rendered = _age_rendered(0.0, openmetrics)
    sample = f"{AGE.name} 0.0\n"
    if not rendered.endswith(sample):
        raise AssertionError(f"prometheus_client rendered the age family as {rendered!r}")
    return rendered[: -len(sample)]


def age(seconds: float, openmetrics: bool) -> str:
    """The age of what a scrape serves, rendered (one small family, per scrape): its head rendered once by
    prometheus_client, its one sample line as prometheus_client renders it (``floatToGoString``). A scrape's Python
    is the concurrent scrapers' limit: this was 80 µs of it (bench/exporter_app_cost.py)."""
    from prometheus_client.utils import floatToGoString

    return f"{_age_head(openmetrics)}{AGE.name} {floatToGoString(max(0.0, seconds))}\n"
