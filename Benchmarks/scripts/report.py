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
                  "Latency: the subscriber's clock at the callback minus the server's `send_time` of the update. "
                  "CPU: getrusage of the client process over the measured window. Memory: resident set after "
                  "following every trip minus before, per trip. Gaps: sequence numbers a subscriber never saw "
                  "(with a latest-value pipeline, a gap is an update merged into a later one while the subscriber "
                  "was behind); duplicates: a sequence number seen twice. Received = delivered + gaps: the updates the "
                  "client took off the wire (grpc-swift-2's client delivers every message, so the two are equal). "
                  "In the saturating rows latency is queueing in the server's send buffers, not delivery time. The latency "
                  "histogram covers 0–2 s in 1 µs steps; a percentile beyond 2 s is shown as the largest latency seen.", "",
                  "| trips | rate/trip | conns | client | delivered/s | received/s | CPU s per 1M received | p50 ms | p99 ms | p99.9 ms | max ms | KiB/trip | gaps | dups | errors |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for s in e2e["scenarios"]:
            rate = f"{s['rate']:g}/s" if s.get("rate") else "max"
            for c in s["clients"]:
                lines.append(
                    f"| {s['trips']:,} | {rate} | {s['connections']} | {c['client']} | {fmt(c['updatesPerSecond'], 0)} | {fmt(c.get('updatesReceivedPerSecond', c['updatesPerSecond']), 0)} | "
                    f"{fmt(c['cpuSecondsPerMillionUpdates'])} | {fmt(c['latencyP50Ms'])} | {fmt(c['latencyP99Ms'])} | "
                    f"{fmt(c['latencyP999Ms'])} | {fmt(c['latencyMaxMs'])} | {fmt(c['rssPerTripBytes'] / 1024)} | "
                    f"{c['gaps']} | {c['duplicates']} | {'–' if c.get('errors') is None else c['errors']} |")
        lines.append("")
        lines.append("Server stats per scenario:")
        lines.append("")
        for s in e2e["scenarios"]:
            rate = f"{s['rate']:g}/s" if s.get("rate") else "max"
            lines.append(f"- {s['trips']:,} trips at {rate}: `{s['serverStats']}`")
        lines.append("")
        if e2e.get("h2load"):
            h = e2e["h2load"]
            lines += ["## Raw HTTP/2 ceiling", "", f"`{h['command']}`: **{fmt(h['requestsPerSecond'], 0)} requests/s**", "",
                      "```", h["output"], "```", ""]
        lines += e2e_targets(e2e, targets)
        plot(e2e)
        lines += ["![latency and CPU per update against trip count](latest.svg)", ""]

    analysis = os.path.join(os.path.dirname(os.path.abspath(__file__)), "analysis.md")
    if os.path.exists(analysis):
        lines += [open(analysis).read()]
    lines[2:2] = ["## Targets", "", "| target | measured | verdict |", "|---|---|---|"] + targets + [
        "", "The codec's decode allocations: 1 for the small update (its `updated_fields` array) and 8 for the full "
        "trip (the name string and seven arrays: route, traffic intervals, waypoints, two paths, two traffic "
        "lists) are the decoded value's own storage; swift-protobuf makes 3 and 43.", ""]
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
    for trips in ("1k", "10k", "100k"):
        m = micro.get(f"Pipeline small update, {trips} trips (1000 updates per iteration)")
        if not m:
            continue
        rate = m["per_second"]
        targets.append(f"| pipeline {trips} trips: ≥ 5M updates/s on one core | {rate / 1e6:.2f}M/s ({m['ns']:.0f} ns per update) | "
                       f"{verdict(rate >= 5e6, '' if rate >= 5e6 else f'at {rate / 5e6:.0%} of it')} |")
        targets.append(f"| pipeline {trips} trips: 0 allocations per small update | {m['mallocs']:.3f} per update | "
                       f"{verdict(m['mallocs'] < 0.001, '' if m['mallocs'] < 0.001 else 'not zero')} |")
    return []


def client(e2e, trips, rate, kind):
    for s in e2e["scenarios"]:
        if s["trips"] == trips and (s.get("rate") == rate):
            for c in s["clients"]:
                if c["client"] == kind:
                    return c
    return None


def e2e_targets(e2e, targets):
    ours100k = client(e2e, 100_000, 1.0, "journeysharing")
    if ours100k:
        p99 = ours100k["latencyP99Ms"]
        targets.append(f"| 100,000 trips at 1/s: delivery p99 < 50 ms | {p99:.2f} ms | {verdict(p99 < 50, '' if p99 < 50 else f'{p99 / 50:.1f}× the bound')} |")
        kib = ours100k["rssPerTripBytes"] / 1024
        targets.append(f"| 100,000 trips: ≤ 4 KiB resident per trip | {kib:.2f} KiB | {verdict(kib <= 4, '' if kib <= 4 else f'{kib - 4:.2f} KiB over')} |")
        started = ours100k["tripsStarted"]
        targets.append(f"| 100,000 trips followed | {started:,} receiving | {verdict(started == 100_000, '')} |")
    for s in e2e["scenarios"]:
        if s.get("rate") is None:
            continue
        ours = client(e2e, s["trips"], s["rate"], "journeysharing")
        theirs = client(e2e, s["trips"], s["rate"], "grpc-swift")
        if ours and theirs and ours["cpuSecondsPerMillionUpdates"] > 0:
            ratio = theirs["cpuSecondsPerMillionUpdates"] / ours["cpuSecondsPerMillionUpdates"]
            targets.append(f"| {s['trips']:,} trips at 1/s: ≥ 3× less client CPU per update than grpc-swift-2 | "
                           f"{ratio:.2f}× ({ours['cpuSecondsPerMillionUpdates']:.2f} vs {theirs['cpuSecondsPerMillionUpdates']:.2f} s per 1M) | "
                           f"{verdict(ratio >= 3, '' if ratio >= 3 else f'short by {3 / ratio:.2f}×')} |")
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
    colours = {"journeysharing": "#1f77b4", "grpc-swift": "#d62728"}
    latency, cpu = [], []
    for kind, colour in colours.items():
        p50s, p99s, cpus = [], [], []
        for s in e2e["scenarios"]:
            if s.get("rate") is None:
                continue
            for c in s["clients"]:
                if c["client"] == kind:
                    p50s.append((s["trips"], c["latencyP50Ms"]))
                    p99s.append((s["trips"], c["latencyP99Ms"]))
                    cpus.append((s["trips"], c["cpuSecondsPerMillionUpdates"]))
        latency += [(f"{kind} p50", colour, "6,3", p50s), (f"{kind} p99", colour, "", p99s)]
        cpu.append((kind, colour, "", cpus))
    svgplot.render(
        os.path.join(RESULTS, "latest.svg"),
        [("Delivery latency at 1 update/trip/s", "milliseconds", latency, True),
         ("Client CPU per update at 1 update/trip/s", "CPU µs per update (= s per 1M)", cpu)],
        [("journeysharing p99", colours["journeysharing"], ""), ("journeysharing p50", colours["journeysharing"], "6,3"),
         ("grpc-swift-2 p99", colours["grpc-swift"], ""), ("grpc-swift-2 p50", colours["grpc-swift"], "6,3")])


if __name__ == "__main__":
    main()
