#!/usr/bin/env python3
"""Plots panels of the chart's Grafana dashboard (charts/overseer/dashboards/overseer.json)
from real scrapes of an operator's /metrics, for a machine where Grafana cannot run.

  hack/dashboard/plot.py scrape URL SECONDS OUT.jsonl   scrape every 2 s
  hack/dashboard/plot.py plot OUT.jsonl OUT.png         draw the panels

The panels are the dashboard's, computed as its PromQL does: gauges as they are,
counters as rates over the scrape interval.
"""
import json
import re
import sys
import time
import urllib.request
from collections import defaultdict

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)')
LABEL = re.compile(r'(\w+)="([^"]*)"')


def parse(text):
    samples = {}
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        match = SAMPLE.match(line)
        if match:
            name, labels, value = match.groups()
            key = (name, tuple(sorted(LABEL.findall(labels or ""))))
            samples[key] = float(value)
    return samples


def scrape(url, seconds, out):
    deadline = time.time() + float(seconds)
    with open(out, "w") as f:
        while time.time() < deadline:
            started = time.time()
            try:
                text = urllib.request.urlopen(url, timeout=5).read().decode()
                samples = parse(text)
                f.write(json.dumps({"t": started, "samples": [[n, l, v] for (n, l), v in samples.items()]}) + "\n")
                f.flush()
            except OSError as error:
                print(f"scrape failed: {error}", file=sys.stderr)
            time.sleep(max(0.0, 2.0 - (time.time() - started)))


def series(scrapes, name, by):
    """Gauge `name` summed by label `by`, per scrape; a value absent from a scrape
    (a phase no object is in any more) is 0, as `sum by` would show it."""
    per_scrape = []
    keys = set()
    for t, samples in scrapes:
        sums = defaultdict(float)
        for (n, labels), v in samples.items():
            if n == name:
                sums[dict(labels).get(by, "")] += v
        keys.update(sums)
        per_scrape.append((t, sums))
    return {key: [(t, sums.get(key, 0.0)) for t, sums in per_scrape] for key in keys}


def rates(scrapes, name, by):
    """Counter `name` summed by label `by`, as a per-second rate between scrapes."""
    totals = series(scrapes, name, by)
    out = {}
    for key, points in totals.items():
        out[key] = [(t1, max(0.0, (v1 - v0) / (t1 - t0))) for (t0, v0), (t1, v1) in zip(points, points[1:]) if t1 > t0]
    return out


def plot(source, png):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    scrapes = []
    with open(source) as f:
        for line in f:
            record = json.loads(line)
            scrapes.append((record["t"], {(n, tuple(tuple(p) for p in l)): v for n, l, v in record["samples"]}))
    start = scrapes[0][0]
    panels = [
        ("Agents by phase", series(scrapes, "overseer_agents", "phase"), ""),
        ("Goals by phase", series(scrapes, "overseer_goals", "phase"), ""),
        ("Goal steps /s", rates(scrapes, "overseer_goal_steps_total", "result"), "ops"),
        ("Reconciliations /s", rates(scrapes, "overseer_reconciliations_total", "controller"), "ops"),
        ("API server writes /s", rates(scrapes, "overseer_api_writes_total", "verb"), "ops"),
        ("API server reads /s", rates(scrapes, "overseer_api_reads_total", "verb"), "ops"),
    ]
    figure, axes = plt.subplots(2, 3, figsize=(15, 7), constrained_layout=True)
    figure.suptitle("overseer dashboard panels, from real /metrics scrapes (kwok cluster)")
    for axis, (title, data, _unit) in zip(axes.flat, panels):
        for key, points in sorted(data.items()):
            if points:
                axis.plot([t - start for t, _ in points], [v for _, v in points], label=key or "all")
        axis.set_title(title)
        axis.set_xlabel("seconds")
        axis.grid(alpha=0.3)
        if data:
            axis.legend(fontsize=7, loc="upper left")
    figure.savefig(png, dpi=90)


if __name__ == "__main__":
    command = sys.argv[1:2]
    if command == ["scrape"] and len(sys.argv) == 5:
        scrape(*sys.argv[2:5])
    elif command == ["plot"] and len(sys.argv) == 4:
        plot(*sys.argv[2:4])
    else:
        sys.exit(__doc__)
