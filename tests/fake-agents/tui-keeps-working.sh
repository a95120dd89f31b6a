#!/usr/bin/env bash
# A TUI agent that never stops working: a new line of output every 0.3 s, forever.
i=0
while true; do i=$((i + 1)); echo "working $i"; sleep 0.3; done
