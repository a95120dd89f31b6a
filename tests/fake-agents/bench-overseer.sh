#!/usr/bin/env bash
# For the wake-latency benchmark: records when each wake message is read.
while IFS= read -r line; do
  case "$line" in
    "[overseer] wake:"*) printf 'wake %s\n' "$(date +%s.%N)" >>"$FAKE_LOG" ;;
  esac
done
