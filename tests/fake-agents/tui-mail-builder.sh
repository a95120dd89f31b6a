#!/usr/bin/env bash
# A builder busy for a while (its screen changing), then idle at its prompt. On a
# mail notice it reads its mail into $FAKE_DIR/read.txt and answers the sender.
for i in $(seq 40); do echo "compiling unit $i"; sleep 0.2; done
printf 'idle %s\n' "$(date +%s.%N)" >>"$FAKE_LOG"
while true; do
  printf '> '
  IFS= read -r line || exit 0
  printf 'got %s %s\n' "$(date +%s.%N)" "$line" >>"$FAKE_LOG"
  case "$line" in
    "[overseer] mail:"*)
      "$OVERSEER_BIN" mail read >>"$FAKE_DIR/read.txt" 2>&1
      echo "mail read exit $?" >>"$FAKE_LOG"
      "$OVERSEER_BIN" mail send scout --type done "fixed the total" >>"$FAKE_LOG" 2>&1
      echo "mail reply exit $?" >>"$FAKE_LOG"
      ;;
  esac
done
