"""The soak's report: report.json, report.md (tables) and latency.png (each operation's latency over time, the
faults as shaded spans). Latencies are split by when an operation ran: ``quiet`` (it ended before the first fault),
``under faults`` (it overlapped a fault, from its injection to the end of its heal) and ``between`` (neither)."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path


def read_ledgers(paths, t0: float) -> list[dict]:
    ops = []
    for path in paths:
        if not Path(path).exists():
            continue
        for line in Path(path).read_text().splitlines():
            if line.strip():
                o = json.loads(line)
                o["start"] -= t0
                o["end"] -= t0
                ops.append(o)
    return sorted(ops, key=lambda o: o["start"])


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    v = sorted(values)
    return v[min(len(v) - 1, max(0, round(q / 100 * len(v) + 0.5) - 1))]


def phase(o: dict, spans: list[tuple[float, float]], quiet_until: float) -> str:
    if any(o["start"] < b and o["end"] > a for a, b in spans):
        return "faults"
    return "quiet" if o["end"] <= quiet_until else "between"


def build(result: dict, ops: list[dict]) -> dict:
    spans = [(f["start"], f.get("end", f["start"])) for f in result["faults"]]
    first_fault = min((a for a, _ in spans), default=result["quiet_until"])
    quiet_until = min(result["quiet_until"], first_fault)
    by_kind: dict[str, dict] = {}
    for o in ops:
        k = by_kind.setdefault(o["kind"], {"succeeded": 0, "refused": 0, "written-unverified": 0, "failed": 0,
                                           "causes": Counter(),
                                           "latency": {"quiet": [], "faults": [], "between": []}})
        k[o["outcome"]] += 1
        if o["outcome"] != "succeeded":
            k["causes"][o["cause"][:160]] += 1
        k["latency"][phase(o, spans, quiet_until)].append(o["end"] - o["start"])
    operations = {}
    for kind, k in sorted(by_kind.items()):
        operations[kind] = {"succeeded": k["succeeded"], "refused": k["refused"],
                            "written_unverified": k["written-unverified"], "failed": k["failed"],
                            "causes": dict(k["causes"].most_common(8)),
                            "latency": {ph: {"n": len(v), "p50": _r(percentile(v, 50)), "p99": _r(percentile(v, 99))}
                                        for ph, v in k["latency"].items()}}
    faults_by_kind = Counter(f["kind"] for f in result["faults"])
    healed = Counter(f["kind"] for f in result["faults"] if "error" not in f)
    violations = sum(i["violations"] for i in result["invariants"].values())
    rep = {**result, "quiet_until": quiet_until, "operations": operations,
           "faults_by_kind": {k: {"injected": n, "healed": healed.get(k, 0)} for k, n in sorted(faults_by_kind.items())},
           "violations": violations}
    rep["table"] = table(rep)
    return rep


def _r(x):
    return None if x is None else round(x, 3)


def _ms(x) -> str:
    return "-" if x is None else f"{x * 1000:,.0f}"


def table(rep: dict) -> str:
    lines = [f"Soak on {rep['topology']} ({rep.get('describe', '')}), {rep['seconds']:g} s, seed {rep['seed']}: "
             f"{rep['violations']} invariant violations", "",
             "| fault | injected | healed |", "| --- | --- | --- |"]
    for k, v in rep["faults_by_kind"].items():
        lines.append(f"| {k} | {v['injected']} | {v['healed']} |")
    lines += ["", "| operation | succeeded | refused | written, not verified | failed | p50 / p99 ms quiet "
                  "| p50 / p99 ms under faults |", "| --- | --- | --- | --- | --- | --- | --- |"]
    for k, v in rep["operations"].items():
        q, f = v["latency"]["quiet"], v["latency"]["faults"]
        lines.append(f"| {k} | {v['succeeded']} | {v['refused']} | {v.get('written_unverified', 0)} | {v['failed']} | "
                     f"{_ms(q['p50'])} / {_ms(q['p99'])} (n {q['n']}) | {_ms(f['p50'])} / {_ms(f['p99'])} (n {f['n']}) |")
    lines += ["", "| invariant | checked | violations |", "| --- | --- | --- |"]
    for k, v in rep["invariants"].items():
        lines.append(f"| {k} | {v['checked']} | {v['violations']} |")
    if rep.get("transient_overcapacity"):
        lines += ["", f"Over capacity for a moment (a provider and class newly over it at a sample, then not): "
                      f"{rep['transient_overcapacity']}."]
    causes = [(k, c, n) for k, v in rep["operations"].items() for c, n in v["causes"].items()]
    if causes:
        lines += ["", "| operation | cause printed (first line) | times |", "| --- | --- | --- |"]
        for k, c, n in sorted(causes, key=lambda x: -x[2])[:12]:
            lines.append(f"| {k} | `{c.replace('|', '/')}` | {n} |")
    if rep.get("not_run"):
        lines += ["", "Not run: " + "; ".join(f"{k}: {v}" for k, v in rep["not_run"].items()) + "."]
    return "\n".join(lines)


def write(rep: dict, ops: list[dict], out: Path) -> None:
    out = Path(out)
    (out / "report.json").write_text(json.dumps(rep, indent=1, default=str) + "\n")
    examples = [f"- {k}: {e}" for k, v in rep["invariants"].items() for e in v["examples"]]
    md = rep["table"] + "\n"
    if examples:
        md += "\nViolations (first of each):\n\n" + "\n".join(examples) + "\n"
    md += f"\nReplay: `{rep['replay']}`\n"
    (out / "report.md").write_text(md)
    plot(rep, ops, out / "latency.png")


def plot(rep: dict, ops: list[dict], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    kinds = sorted({o["kind"] for o in ops})
    fig, ax = plt.subplots(figsize=(12, 5))
    colours = plt.get_cmap("tab10")
    fault_kinds = sorted({f["kind"] for f in rep["faults"]})
    for f in rep["faults"]:
        ax.axvspan(f["start"], f.get("end", f["start"]), alpha=0.18,
                   color=colours(3 + fault_kinds.index(f["kind"]) % 7), lw=0)
        ax.text(f["start"], 1.02, f["kind"], rotation=60, fontsize=6, transform=ax.get_xaxis_transform())
    marks = {"succeeded": "o", "refused": "s", "written-unverified": "d", "failed": "x"}
    for i, kind in enumerate(kinds):
        for outcome, m in marks.items():
            xs = [o["start"] for o in ops if o["kind"] == kind and o["outcome"] == outcome]
            ys = [o["end"] - o["start"] for o in ops if o["kind"] == kind and o["outcome"] == outcome]
            if xs:
                ax.scatter(xs, ys, s=10, marker=m, color=colours(i), label=f"{kind} {outcome}")
    ax.set_yscale("log")
    ax.set_xlabel("seconds since the soak's start (shaded: a fault, injection to healed)")
    ax.set_ylabel("latency s")
    ax.set_title(f"soak {rep['topology']} seed {rep['seed']}: {rep['violations']} invariant violations", pad=85)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
