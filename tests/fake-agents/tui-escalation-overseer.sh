#!/usr/bin/env bash
# A scripted overseer that answers escalations: every line it receives goes to
# $FAKE_LOG; for each escalation line it reads the agent's reasons (`overseer
# escalations`, saved to $FAKE_DIR/escalations-AGENT.txt) and answers with `overseer send`.
echo "overseer ready"
while true; do
  printf '> '
  IFS= read -r line || exit 0
  printf 'line %s\n' "$line" >>"$FAKE_LOG"
  case "$line" in
    "- agent="*" escalation="*)
      agent=${line#- agent=}
      agent=${agent%% *}
      printf 'told %s %s\n' "$(date +%s.%N)" "$agent" >>"$FAKE_LOG"
      "$OVERSEER_BIN" escalations "$agent" >"$FAKE_DIR/escalations-$agent.txt" 2>&1
      echo "escalations exit $?" >>"$FAKE_LOG"
      "$OVERSEER_BIN" send "$agent" "continue: use the test key" >>"$FAKE_LOG" 2>&1
      echo "send exit $? $(date +%s.%N)" >>"$FAKE_LOG"
      ;;
  esac
done
