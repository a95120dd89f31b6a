#!/usr/bin/env bash
# A scripted fleet monitor: every line it receives goes to $FAKE_LOG; on a patrol it
# looks at the fleet (`overseer ps`, `peek`, `claims`, saved under $FAKE_DIR), tries
# to write to a member (which its rights refuse) and escalates to its overseer.
echo "monitor ready"
while true; do
  printf '> '
  IFS= read -r line || exit 0
  printf 'line %s\n' "$line" >>"$FAKE_LOG"
  case "$line" in
    "[overseer] Patrol #"*)
      "$OVERSEER_BIN" ps >"$FAKE_DIR/ps.txt" 2>&1
      echo "ps exit $?" >>"$FAKE_LOG"
      "$OVERSEER_BIN" peek team-a >"$FAKE_DIR/peek-team-a.txt" 2>&1
      echo "peek exit $?" >>"$FAKE_LOG"
      "$OVERSEER_BIN" peek other-b >"$FAKE_DIR/peek-other-b.txt" 2>&1
      echo "peek other exit $?" >>"$FAKE_LOG"
      "$OVERSEER_BIN" claims >"$FAKE_DIR/claims.txt" 2>&1
      echo "claims exit $?" >>"$FAKE_LOG"
      "$OVERSEER_BIN" send team-a "stop that" --wait 0 >"$FAKE_DIR/send.txt" 2>&1
      echo "send exit $?" >>"$FAKE_LOG"
      "$OVERSEER_BIN" escalate --severity warning --reason "team-a looks stuck" >>"$FAKE_LOG" 2>&1
      echo "escalate exit $?" >>"$FAKE_LOG"
      ;;
  esac
done
