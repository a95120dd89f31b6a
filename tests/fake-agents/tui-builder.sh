#!/usr/bin/env bash
# A builder that stops too early: it works, then sits at its prompt without
# declaring done. Each line it receives goes to $FAKE_LOG (with the time it was
# read); on a "continue:" it works on it, then ends its loop with `overseer loop done`.
for i in 1 2 3; do echo "building step $i"; sleep 0.3; done
echo "tests still missing"
printf 'idle %s\n' "$(date +%s.%N)" >>"$FAKE_LOG"
while true; do
  printf '> '
  IFS= read -r line || exit 0
  printf 'got %s %s\n' "$(date +%s.%N)" "$line" >>"$FAKE_LOG"
  case "$line" in
    continue:*)
      echo "working on the direction"
      sleep 1
      echo "tests added"
      "$OVERSEER_BIN" loop done --reason "tests added" >>"$FAKE_LOG" 2>&1
      echo "loop done exit $?" >>"$FAKE_LOG"
      ;;
  esac
done
