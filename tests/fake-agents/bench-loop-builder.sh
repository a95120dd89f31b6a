#!/usr/bin/env bash
# For the loop benchmark: works briefly, then stops at its prompt without declaring
# done, again and again. Logs when it went idle and when it got a message.
while true; do
  echo "working $(date +%s.%N)"
  sleep 0.3
  printf 'idle %s\n' "$(date +%s.%N)" >>"$FAKE_LOG"
  printf '> '
  IFS= read -r line || exit 0
  printf 'got %s\n' "$(date +%s.%N)" >>"$FAKE_LOG"
done
