#!/usr/bin/env bash
# A swarm member that sits at its prompt: each line it receives goes to $FAKE_LOG as
# "got TIME LINE" (what the mail benchmark times).
echo "ready"
while true; do
  printf '> '
  IFS= read -r line || exit 0
  printf 'got %s %s\n' "$(date +%s.%N)" "$line" >>"$FAKE_LOG"
done
