#!/usr/bin/env bash
# A scripted overseer CLI. For every agent named in a wake it reads what the agent
# last did (`overseer peek`, saved to $FAKE_DIR/peek-AGENT.txt) and sends it
# direction (`overseer send`); each step and its exit code go to $FAKE_LOG.
echo "overseer ready"
while true; do
  printf '> '
  IFS= read -r line || exit 0
  case "$line" in
    "- agent="*)
      agent=${line#- agent=}
      agent=${agent%% *}
      printf 'woken %s %s\n' "$(date +%s.%N)" "$agent" >>"$FAKE_LOG"
      "$OVERSEER_BIN" peek "$agent" --lines 20 >"$FAKE_DIR/peek-$agent.txt" 2>&1
      echo "peek exit $?" >>"$FAKE_LOG"
      "$OVERSEER_BIN" send "$agent" "continue: ${FAKE_DIRECTION:-add the missing tests}" >>"$FAKE_LOG" 2>&1
      echo "send exit $? $(date +%s.%N)" >>"$FAKE_LOG"
      ;;
  esac
done
