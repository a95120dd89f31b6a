#!/usr/bin/env bash
# For the wake-latency benchmark: a burst of output, then silence. Each stop's time
# (the last output, in epoch seconds with nanoseconds) goes to $FAKE_LOG.
while true; do
  echo "working $(date +%s.%N)"
  printf 'stop %s\n' "$(date +%s.%N)" >>"$FAKE_LOG"
  sleep "${FAKE_SILENCE:-4}"
done
