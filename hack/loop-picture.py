#!/usr/bin/env python3
"""Draws one run of `make demo-loop` as an SVG timeline (docs/images/loop.svg): the
builder, the operator and the overseer (lead) as three lanes, each hop at the time
the run recorded it: the scripted CLIs' logs (epoch stamps) and the operator's Events.
Hops are numbered in the loop's order; an Event's time is when the operator published
it, behind the act it reports (a fraction of a second), so a hop of the operator can
sit just after the one it caused.

  hack/loop-picture.py EVENTS.json BUILDER_LOG LEAD_LOG OUT.svg

EVENTS.json is `kubectl get events -o json` of the demo's namespace.
"""
import json
import sys
from datetime import datetime
from html import escape


def event_time(event):
    stamp = event.get("eventTime") or event.get("lastTimestamp") or event.get("firstTimestamp")
    stamp = stamp.replace("Z", "+00:00")
    return datetime.fromisoformat(stamp).timestamp()


def stamps(path, prefix):
    found = []
    for line in open(path, encoding="utf-8", errors="replace"):
        if line.startswith(prefix):
            words = line[len(prefix):].split()
            try:
                found.append((float(words[0]), " ".join(words[1:])))
            except (IndexError, ValueError):
                pass
    return found


# Each hop's place in the loop: what causes what.
ORDER = ["idle", "OverseerWoken", "woken", "send", "MessageDelivered", "got", "Done"]


def hops(events, builder_log, lead_log):
    """(time, lane, label) of each hop of the loop, in the loop's order."""
    found = []
    idle = stamps(builder_log, "idle ")
    if idle:
        found.append(("idle", idle[0][0], "builder", "stops at its prompt, not done"))
    for event in events["items"]:
        obj = event["involvedObject"]["name"]
        reason = event["reason"]
        label = {
            ("builder", "OverseerWoken"): "idle past idleAfter: wakes the lead",
            ("builder", "MessageDelivered"): "types the lead's message in",
            ("builder", "Done"): "records Done",
        }.get((obj, reason))
        if label:
            found.append((reason, event_time(event), "operator", label))
    for time, agent in stamps(lead_log, "woken "):
        found.append(("woken", time, "lead", f"woken about {agent}; overseer peek {agent}"))
    for line in open(lead_log, encoding="utf-8", errors="replace"):
        if line.startswith("send exit 0 "):
            found.append(("send", float(line.split()[3]), "lead", "overseer send: delivered"))
    for time, text in stamps(builder_log, "got "):
        found.append(("got", time, "builder", f"reads \u201c{text[:40]}\u201d, works, loop done"))
    found.sort(key=lambda hop: (ORDER.index(hop[0]), hop[1]))
    return [hop[1:] for hop in found]


def svg(found):
    lanes = ["builder", "operator", "lead"]
    start = min(hop[0] for hop in found)
    span = max(max(hop[0] for hop in found) - start, 1.0)
    width, left, right, lane_h, top = 980, 110, 40, 70, 60
    height = top + lane_h * len(lanes) + 40 + 22 * len(found)
    x = lambda t: left + (t - start) / span * (width - left - right)
    y = lambda lane: top + lane_h * lanes.index(lane) + lane_h / 2
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="DejaVu Sans, Arial, sans-serif" font-size="13">',
        f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
        f'<text x="{left}" y="28" font-size="16" font-weight="bold">The overseer loop: one run of make demo-loop ({span:.1f} s)</text>',
    ]
    for lane in lanes:
        out.append(f'<line x1="{left}" y1="{y(lane)}" x2="{width - right}" y2="{y(lane)}" stroke="#c8d1dc" stroke-width="2"/>')
        out.append(f'<text x="12" y="{y(lane) + 5}" font-weight="bold">{lane}</text>')
    previous = None
    for number, (time, lane, label) in enumerate(found, start=1):
        px, py = x(time), y(lane)
        if previous:
            out.append(
                f'<line x1="{previous[0]:.1f}" y1="{previous[1]}" x2="{px:.1f}" y2="{py}" '
                'stroke="#2f80ed" stroke-width="1.5" stroke-dasharray="4 3"/>'
            )
        out.append(f'<circle cx="{px:.1f}" cy="{py}" r="11" fill="#2f80ed"/>')
        out.append(f'<text x="{px:.1f}" y="{py + 4}" fill="#ffffff" text-anchor="middle" font-size="11">{number}</text>')
        previous = (px, py)
    legend_top = top + lane_h * len(lanes) + 30
    for number, (time, lane, label) in enumerate(found, start=1):
        out.append(
            f'<text x="{left}" y="{legend_top + 22 * (number - 1)}">'
            f'{number}. +{time - start:5.1f} s  {escape(lane)}: {escape(label)}</text>'
        )
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    events_path, builder_log, lead_log, out = sys.argv[1:5]
    with open(events_path, encoding="utf-8") as f:
        events = json.load(f)
    found = hops(events, builder_log, lead_log)
    if len(found) < 5:
        sys.exit(f"loop-picture: only {len(found)} hops found; the run did not close the loop")
    with open(out, "w", encoding="utf-8") as f:
        f.write(svg(found))
    times = [hop[0] for hop in found]
    print(f"loop-picture: {len(found)} hops over {max(times) - min(times):.1f} s -> {out}")


if __name__ == "__main__":
    main()
