#!/usr/bin/env bash
# A scout that mails a finding to the builder (retrying until its swarm mates exist),
# then waits at its prompt: each line it receives goes to $FAKE_LOG, and on a mail
# notice it reads its mail into $FAKE_DIR/read.txt.
echo "mapping the repo"
for _ in $(seq 120); do
  start=$(date +%s.%N)
  out=$("$OVERSEER_BIN" mail send builder --type finding "the total is computed in src/total.rs:42" 2>&1)
  code=$?
  [ "$code" = 0 ] && break
  sleep 0.5
done
printf '%s\n' "$out" >>"$FAKE_LOG"
echo "mail send exit $code" >>"$FAKE_LOG"
printf 'mailed %s\n' "$start" >>"$FAKE_LOG"
while true; do
  printf '> '
  IFS= read -r line || exit 0
  printf 'got %s %s\n' "$(date +%s.%N)" "$line" >>"$FAKE_LOG"
  case "$line" in
    "[overseer] mail:"*)
      "$OVERSEER_BIN" mail read >>"$FAKE_DIR/read.txt" 2>&1
      echo "mail read exit $?" >>"$FAKE_LOG"
      ;;
  esac
done
