#!/usr/bin/env python3
"""Writes Benchmarks/results/latest.md and latest.svg from one `make bench` run.

Inputs (all in the results directory):
  codec.jmh, pipeline.jmh   ordo-one/benchmark's JMH export of the micro benchmarks
  e2e.json                  tripload run's scenarios and h2load figure
Targets are checked here and every miss is stated with its size.
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import svgplot  # noqa: E402

RESULTS = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "results")


def load_jmh(path):
    """{benchmark name: {'time': p50, 'mallocs': p50, 'throughput': p50}} from ordo-one's JMH export.

    Codec benchmarks use scalingFactor .kilo and pipeline benchmarks push 1,000 updates per iteration, so
    for both the wall-clock p50 (reported in µs per 1,000 operations) is nanoseconds per operation, the
    malloc p50 divided by 1,000 is allocations per operation, and the throughput p50 times 1,000 is
    operations per second."""
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        entries = json.load(f)
    out = {}
    for entry in entries:
        name = entry["benchmark"].split(".")[-1].replace("_", " ")
        metrics = entry.get("secondaryMetrics") or {}

        def p50(metric):
            return (metric or {}).get("scorePercentiles", {}).get("50.0")

        out[name] = {
            "ns": p50(metrics.get("Time (wall clock)")),
            "mallocs": (p50(metrics.get("Malloc (total)")) or 0) / 1000,
            "per_second": (p50(entry.get("primaryMetric")) or 0) * 1000,
        }
    return out


def fmt(value, digits=2):
    if value is None:
        return "–"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.{digits}f}"


def verdict(ok, detail):
    return ("**met**" if ok else "**missed**") + (f" ({detail})" if detail else "")


def main():
    lines = ["# JourneySharing benchmark results", ""]
    e2e_path = os.path.join(RESULTS, "e2e.json")
    e2e = json.load(open(e2e_path)) if os.path.exists(e2e_path) else None
    if e2e:
        lines += [f"Machine: {e2e['machine']}; client and server share it. Run: {e2e['date']}.", ""]
    targets = []

    # --- micro benchmarks -----------------------------------------------------------------
    micro = load_jmh(os.path.join(RESULTS, "Current_run.jmh.json"))
    if micro:
        lines += ["## Micro benchmarks (ordo-one/benchmark, release build, p50 of the samples)", "",
                  "| benchmark | ns per operation | allocations per operation | operations/s |", "|---|---|---|---|"]
        for name in sorted(micro):
            m = micro[name]
            lines.append(f"| {name} | {fmt(m['ns'], 1)} | {m['mallocs']:.3f} | {fmt(m['per_second'], 0)} |")
        lines += ["", "Codec payloads: the small update is a `TripUpdate` with the vehicle's location, ETA and remaining "
                  f"distance; the full trip a `Trip` with a 200-point route, three waypoints with paths and traffic "
                  "(Benchmarks/Sources/BenchmarkFixtures). Pipeline: one update per trip in round-robin, each merged, "
                  "derived, diffed and handed to the trip's subscriber on one delivery thread.", ""]
    lines += codec_and_pipeline_targets(micro, targets)

    # --- end to end -----------------------------------------------------------------------
    if e2e:
        lines += ["## End to end (tripload: FleetSim on loopback, one client process at a time)", "",
                  "Each client ran `runs` times against the same server (the clients taking turns); every figure is the "
                  "median of its runs, with the lowest and highest run in brackets where they differ. "
                  "Latency: the subscriber's clock at the callback minus the server's `send_time` of the update; for "
                  "the polling rows, a poll's round trip (request sent to answer handled), and the rate is polls "
                  "answered per second. "
                  "CPU: getrusage of the client process over the measured window, per update received (per poll "
                  "answered). Memory: resident set after following every trip minus before, per trip. Gaps: sequence "
                  "numbers a subscriber never saw (with a latest-value pipeline, a gap is an update merged into a later "
                  "one while the subscriber was behind); duplicates: a sequence number seen twice. Received = delivered "
                  "+ gaps: the updates the client took off the wire (grpc-swift-2's and grpc-go's clients deliver every "
                  "message, so the two are equal; grpc-go's merges each into the trip's state, by protobuf reflection). In the saturating rows latency is queueing in the server's send buffers, not "
                  "delivery time. The latency histogram covers 0–2 s in 1 µs steps; a percentile beyond 2 s is shown "
                  "as the largest latency seen.", "",
                  "| trips | mode | conns | client | runs | delivered/s | received/s | CPU µs per update (per poll) | p50 ms | p99 ms | p99.9 ms | max ms | KiB/trip | gaps | dups | errors |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for s in e2e["scenarios"]:
            mode = scenario_mode(s)
            for c in s["clients"]:
                runs = runs_of(s, c["client"])

                def cell(key, digits=2, scale=1.0):
                    values = [r[key] * scale for r in runs if r.get(key) is not None]
                    text = fmt(c[key] * scale, digits)
                    if len(values) > 1 and fmt(min(values), digits) != fmt(max(values), digits):
                        text += f" ({fmt(min(values), digits)}–{fmt(max(values), digits)})"
                    return text
                if stopped_at_cap(runs):
                    gib = max(r["rssBytes"] for r in runs) / (1 << 30)
                    started = max(r["tripsStarted"] for r in runs)
                    lines.append(
                        f"| {s['trips']:,} | {mode} | {s['connections']} | {c['client']} | {len(runs)} | stopped at its memory "
                        f"cap (up to {gib:.1f} GiB resident) with {started:,} of {s['trips']:,} trips receiving, every run "
                        "| – | – | – | – | – | – | – | – | – | – |")
                    continue
                lines.append(
                    f"| {s['trips']:,} | {mode} | {s['connections']} | {c['client']} | {len(runs)} | {cell('updatesPerSecond', 0)} | "
                    f"{fmt(c.get('updatesReceivedPerSecond', c['updatesPerSecond']), 0)} | {cell('cpuSecondsPerMillionUpdates')} | "
                    f"{cell('latencyP50Ms')} | {cell('latencyP99Ms')} | {cell('latencyP999Ms')} | {fmt(c['latencyMaxMs'])} | "
                    f"{cell('rssPerTripBytes', 2, 1 / 1024)} | {c['gaps']} | {c['duplicates']} | "
                    f"{'–' if c.get('errors') is None else c['errors']} |")
        lines.append("")
        lines.append("Server stats per scenario:")
        lines.append("")
        for s in e2e["scenarios"]:
            lines.append(f"- {s['trips']:,} trips, {scenario_mode(s)}{server_cpu_note(s)}:")
            lines += [f"  - `{line}`" for line in s["serverStats"].split("\n")]
        lines.append("")
        if e2e.get("h2load"):
            h = e2e["h2load"]
            lines += ["## Raw HTTP/2 ceiling", "", f"`{h['command']}`: **{fmt(h['requestsPerSecond'], 0)} requests/s**", "",
                      "```", h["output"], "```", ""]
        lines += e2e_targets(e2e, targets)
        plot(e2e)
        lines += ["![latency, CPU and memory per trip against trip count; saturating and polling](latest.svg)", ""]

    analysis = os.path.join(os.path.dirname(os.path.abspath(__file__)), "analysis.md")
    if os.path.exists(analysis):
        lines += [open(analysis).read()]
    lines[2:2] = ["## Targets", "", "| target | measured | verdict |", "|---|---|---|"] + targets + [
        "", "The codec's decode allocations are the decoded value's own storage: for the small update decoded whole, "
        "its `Trip`'s storage and its `updated_fields` array; decoded flat (`TripProgressUpdate`, the follower's "
        "path for a vehicle's progress), none. For the full trip: the trip's storage, the name string and its arrays "
        "(route, traffic intervals, waypoints, paths, traffic lists).", ""]
    with open(os.path.join(RESULTS, "latest.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(["| target | measured | verdict |"] + targets))


def codec_and_pipeline_targets(micro, targets):
    for payload in ("small update", "full trip"):
        for op, need in (("decode", 3.0), ("encode", 2.0)):
            ours = micro.get(f"Codec {op} {payload} (ProtoWire)")
            theirs = micro.get(f"Codec {op} {payload} (swift-protobuf)")
            if ours and theirs and ours["ns"]:
                ratio = theirs["ns"] / ours["ns"]
                targets.append(f"| codec {op} {payload}: ≥ {need:g}× faster than swift-protobuf | {ratio:.2f}× "
                               f"({ours['ns']:.0f} vs {theirs['ns']:.0f} ns) | "
                               f"{verdict(ratio >= need, '' if ratio >= need else f'short by {need / ratio:.2f}×')} |")
            if op == "decode" and ours:
                targets.append(f"| codec decode {payload}: no allocation beyond the value's own storage | "
                               f"{ours['mallocs']:.0f} per decode (swift-protobuf {theirs['mallocs']:.0f}) | see note |")
    for variant in ("", " encoded"):
        for trips in ("1k", "10k", "100k"):
            m = micro.get(f"Pipeline small update{variant}, {trips} trips (1000 updates per iteration)")
            if not m:
                continue
            rate = m["per_second"]
            what = f"pipeline{variant} {trips} trips"
            targets.append(f"| {what}: ≥ 2M updates/s on one core | {rate / 1e6:.2f}M/s ({m['ns']:.0f} ns per update) | "
                           f"{verdict(rate >= 2e6, '' if rate >= 2e6 else f'at {rate / 2e6:.0%} of it')} |")
            targets.append(f"| {what}: 0 allocations per small update | {m['mallocs']:.3f} per update | "
                           f"{verdict(m['mallocs'] < 0.001, '' if m['mallocs'] < 0.001 else 'not zero')} |")
    return []


def scenario_mode(s):
    if s.get("mode") == "poll":
        return "polled every 5 s"
    return f"{s['rate']:g}/s" if s.get("rate") else "max"


def runs_of(s, kind):
    runs = [r for r in (s.get("runs") or []) if r["client"] == kind]
    return runs or [c for c in s["clients"] if c["client"] == kind]


def stopped_at_cap(runs):
    """Whether every one of a client's runs stopped at its memory cap before following the trips."""
    return bool(runs) and all(r.get("stoppedAtMemoryCap") for r in runs)


def server_cpu_note(s):
    """The server's CPU per update (or per poll) from its stats line(s): one line per server, the median."""
    per = []
    for line in s["serverStats"].split("\n"):
        stats = dict(part.split("=", 1) for part in line.split() if "=" in part)
        try:
            cpu = float(stats["cpu_seconds"])
            count = int(stats["unary"]) if s.get("mode") == "poll" else int(stats["updates"])
        except (KeyError, ValueError):
            continue
        if count > 0:
            per.append(cpu / count * 1e6)
    if not per:
        return ""
    per.sort()
    unit = "poll" if s.get("mode") == "poll" else "update"
    spread = f" ({per[0]:.2f}–{per[-1]:.2f})" if len(per) > 1 else ""
    return (f" — server CPU over its life (first messages included) {per[len(per) // 2]:.2f} µs per {unit}{spread}, "
            f"{len(per)} server{'s' if len(per) > 1 else ''}")


# The clients ours is measured against, by kind, with the names the results use.
ANCHORS = {"grpc-swift": "grpc-swift-2", "grpc-go": "grpc-go"}


def client(e2e, trips, rate, kind, mode="stream"):
    for s in e2e["scenarios"]:
        if s["trips"] == trips and (s.get("mode") or "stream") == mode and (mode == "poll" or s.get("rate") == rate):
            for c in s["clients"]:
                if c["client"] == kind:
                    return c
    return None


def e2e_targets(e2e, targets):
    ours100k = client(e2e, 100_000, 1.0, "journeysharing")
    if ours100k:
        runs = [r for s in e2e["scenarios"] if s["trips"] == 100_000 and (s.get("mode") or "stream") == "stream"
                and s.get("rate") == 1.0 for r in runs_of(s, "journeysharing")]
        worst = max(r["latencyP99Ms"] for r in runs)
        ok = all(r["latencyP99Ms"] < 50 for r in runs)
        every = ", ".join(f"{r['latencyP99Ms']:.2f}" for r in runs)
        targets.append(f"| 100,000 trips at 1/s: delivery p99 < 50 ms in every run | {every} ms ({len(runs)} runs) | "
                       f"{verdict(ok, '' if ok else f'worst run {worst / 50:.1f}× the bound')} |")
        started = ours100k["tripsStarted"]
        targets.append(f"| 100,000 trips followed | {started:,} receiving | {verdict(started == 100_000, '')} |")
    million = client(e2e, 1_000_000, 0.1, "journeysharing")
    if million:
        p99 = million["latencyP99Ms"]
        runs = [r for s in e2e["scenarios"] if s["trips"] == 1_000_000 for r in runs_of(s, "journeysharing")]
        every = ", ".join(f"{r['latencyP99Ms']:.2f}" for r in runs)
        over = sum(1 for r in runs if r["latencyP99Ms"] >= 100)
        note = f"; {over} of {len(runs)} runs over" if over else ""
        targets.append(f"| a million trips at 1/10 s: p99 < 100 ms | median {p99:.2f} ms (runs {every}) | "
                       f"{verdict(p99 < 100, '' if p99 < 100 else f'{p99 / 100:.1f}× the bound')}{note} |")
    else:
        targets.append("| a million trips at 1/10 s: p99 < 100 ms and ≤ 4 KiB per trip | not measured (no million-trip row) | **missed** |")
    memory = million or ours100k
    if memory:
        kib = memory["rssPerTripBytes"] / 1024
        targets.append(f"| {memory['trips']:,} trips: ≤ 4 KiB resident per trip | {kib:.2f} KiB | {verdict(kib <= 4, '' if kib <= 4 else f'{kib - 4:.2f} KiB over')} |")
    # Issue 26's client CPU bounds at 1 update per trip per second, and per poll.
    for trips, bound in ((1_000, 8), (10_000, 4), (100_000, 3)):
        ours = client(e2e, trips, 1.0, "journeysharing")
        if ours and ours["cpuSecondsPerMillionUpdates"] > 0:
            cpu = ours["cpuSecondsPerMillionUpdates"]
            targets.append(f"| {trips:,} trips at 1/s: client CPU ≤ {bound} µs per update | {cpu:.2f} µs | "
                           f"{verdict(cpu <= bound, '' if cpu <= bound else f'{cpu / bound:.1f}× the bound')} |")
    for s in e2e["scenarios"]:
        if s.get("mode") != "poll":
            continue
        ours = client(e2e, s["trips"], None, "journeysharing-poll", "poll")
        if ours and ours["cpuSecondsPerMillionUpdates"] > 0:
            cpu = ours["cpuSecondsPerMillionUpdates"]
            targets.append(f"| {s['trips']:,} trips polled every 5 s: client CPU ≤ 30 µs per poll | {cpu:.2f} µs | "
                           f"{verdict(cpu <= 30, '' if cpu <= 30 else f'{cpu / 30:.1f}× the bound')} |")
    # Against each anchor: ≥ 3× less CPU per update (or poll) at every count; against grpc-go also ≥ 4× less
    # resident memory per trip.
    for anchor, name in ANCHORS.items():
        for s in e2e["scenarios"]:
            poll = s.get("mode") == "poll"
            mode = s.get("mode") or "stream"
            ours = client(e2e, s["trips"], s.get("rate"), "journeysharing-poll" if poll else "journeysharing", mode)
            theirs = client(e2e, s["trips"], s.get("rate"), anchor + ("-poll" if poll else ""), mode)
            if not (ours and theirs):
                continue
            unit = "poll" if poll else "update"
            if stopped_at_cap(runs_of(s, theirs["client"])):
                gib = theirs["rssBytes"] / (1 << 30)
                targets.append(f"| {s['trips']:,} trips, {scenario_mode(s)}: ≥ 3× less client CPU per {unit} than {name} | "
                               f"no ratio: {name} stopped at {gib:.1f} GiB resident (its cap) with "
                               f"{theirs['tripsStarted']:,} of {s['trips']:,} trips receiving | — |")
                continue
            if ours["cpuSecondsPerMillionUpdates"] > 0:
                ratio = theirs["cpuSecondsPerMillionUpdates"] / ours["cpuSecondsPerMillionUpdates"]
                targets.append(f"| {s['trips']:,} trips, {scenario_mode(s)}: ≥ 3× less client CPU per {unit} than {name} | "
                               f"{ratio:.2f}× ({ours['cpuSecondsPerMillionUpdates']:.2f} vs {theirs['cpuSecondsPerMillionUpdates']:.2f} µs) | "
                               f"{verdict(ratio >= 3, '' if ratio >= 3 else f'short by {3 / ratio:.2f}×')} |")
            if anchor == "grpc-go" and not poll and ours["rssPerTripBytes"] > 0:
                ratio = theirs["rssPerTripBytes"] / ours["rssPerTripBytes"]
                targets.append(f"| {s['trips']:,} trips, {scenario_mode(s)}: ≥ 4× less resident memory per trip than {name} | "
                               f"{ratio:.2f}× ({ours['rssPerTripBytes'] / 1024:.2f} vs {theirs['rssPerTripBytes'] / 1024:.2f} KiB) | "
                               f"{verdict(ratio >= 4, '' if ratio >= 4 else f'short by {4 / ratio:.2f}×')} |")
            if poll:
                targets.append(f"| {s['trips']:,} trips polled: poll latency p99 against {name} | "
                               f"{ours['latencyP99Ms']:.2f} vs {theirs['latencyP99Ms']:.2f} ms | "
                               f"{verdict(ours['latencyP99Ms'] <= theirs['latencyP99Ms'], '')} |")
    sat = client(e2e, 10_000, None, "journeysharing")
    if sat and e2e.get("h2load"):
        h2 = e2e["h2load"]["requestsPerSecond"]
        received = sat.get("updatesReceivedPerSecond", sat["updatesPerSecond"])
        ratio = received / h2
        targets.append(f"| 10,000 trips as fast as flow control allows: ≥ ½ of h2load's requests/s | "
                       f"{received:,.0f} updates/s received vs {h2:,.0f} requests/s = {ratio:.2f} | "
                       f"{verdict(ratio >= 0.5, '' if ratio >= 0.5 else f'at {ratio / 0.5:.0%} of the target')} |")
    return []


def plot(e2e):
    colours = {"journeysharing": "#1f77b4", "grpc-swift": "#d62728", "grpc-go": "#2ca02c"}
    names = {"journeysharing": "journeysharing", **ANCHORS}
    latency, cpu, memory = [], [], []
    for kind, colour in colours.items():
        p50s, p99s, cpus, kib = [], [], [], []
        for s in e2e["scenarios"]:
            if s.get("rate") is None or s.get("mode") == "poll":
                continue
            for c in s["clients"]:
                if c["client"] != kind:
                    continue
                runs = runs_of(s, kind)
                if stopped_at_cap(runs):
                    continue  # no trip followed: nothing to plot (the table says how far it got)

                def spread(key, scale=1.0):
                    values = [r[key] * scale for r in runs]
                    return (s["trips"], c[key] * scale, min(values), max(values))
                p50s.append((s["trips"], c["latencyP50Ms"]))
                p99s.append(spread("latencyP99Ms"))
                cpus.append(spread("cpuSecondsPerMillionUpdates"))
                kib.append(spread("rssPerTripBytes", 1 / 1024))
        if not cpus:
            continue  # not in these results
        latency += [(f"{names[kind]} p99 (bar: runs' spread)", colour, "", p99s), (f"{names[kind]} p50", colour, "6,3", p50s)]
        cpu.append((f"{names[kind]} CPU per update (bar: spread)", colour, "", cpus))
        memory.append((f"{names[kind]} resident KiB per trip", colour, "", kib))
    groups = []
    for s in e2e["scenarios"]:
        if s.get("rate") is not None and s.get("mode") != "poll":
            continue
        poll = s.get("mode") == "poll"
        bars = []
        for kind, colour in colours.items():
            c = client(e2e, s["trips"], s.get("rate"), kind + ("-poll" if poll else ""), s.get("mode") or "stream")
            if c:
                values = [r["cpuSecondsPerMillionUpdates"] for r in runs_of(s, c["client"])]
                bars.append((names[kind], colour, c["cpuSecondsPerMillionUpdates"], min(values), max(values)))
        groups.append((f"{s['trips']:,} {'polled every 5 s' if poll else 'saturating'}", bars))
    panels = [
        {"kind": "line", "title": "Delivery latency (1 update/trip/s; a million: 1 per 10 s)", "ylabel": "milliseconds", "series": latency,
         "log_y": True, "targets": [("target p99 < 50 ms at 100,000", 50), ("< 100 ms at a million", 100)]},
        {"kind": "line", "title": "Client CPU per update (1/s; a million: 1 per 10 s)", "ylabel": "CPU µs per update",
         "series": cpu, "targets": [("target ≤ 4 µs at 10,000", 4)]},
        {"kind": "line", "title": "Resident memory per trip", "ylabel": "KiB per trip", "series": memory,
         "targets": [("target ≤ 4 KiB", 4)]},
    ]
    if groups:
        panels.append({"kind": "bar", "title": "Saturating and polling: client CPU", "ylabel": "CPU µs per update / per poll",
                       "groups": groups})
    svgplot.render(os.path.join(RESULTS, "latest.svg"), panels)


if __name__ == "__main__":
    main()
