#!/usr/bin/env bash
# A TUI agent: works for a moment, then sits idle at its prompt. Every line it
# receives is appended to $FAKE_LOG, then it "works" on it and is idle again.
for i in 1 2 3; do echo "thinking $i"; sleep 0.3; done
while true; do
  printf '> '
  IFS= read -r line || exit 0
  printf '%s\n' "$line" >>"$FAKE_LOG"
  echo "working on: ${#line} characters"
  sleep 0.5
  echo "done with that"
done
