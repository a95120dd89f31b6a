#!/usr/bin/env bash
# A headless step run in a real container (`codex exec ACTION` in the agent test
# image): the action's first word picks what it does, so a Goal scripts its steps.
#   succeed ...   works for a moment and exits 0; its last line is the step's result
#   flaky ...     fails (exit 3) on attempt 1, succeeds on later attempts, naming the
#                 steps whose results it was given
#   slow ...      as succeed, after 8 s (a step still running when the leader dies)
#   hang ...      never finishes (a step past its timeout)
#   write ...     writes <item>.txt in the workspace, left for `overseer step` to land
#   list ...      its result is the workspace's .txt files
action="${*: -1}"
case "$action" in
  succeed*)
    echo "working on: $action"
    sleep "${FAKE_RUN_SECONDS:-1}"
    echo "$OVERSEER_STEP done on attempt $OVERSEER_ATTEMPT in $(hostname)"
    ;;
  slow*)
    echo "working on: $action"
    sleep 8
    echo "$OVERSEER_STEP done on attempt $OVERSEER_ATTEMPT"
    ;;
  flaky*)
    if [ "$OVERSEER_ATTEMPT" = 1 ]; then
      echo "$OVERSEER_STEP failed on attempt 1"
      exit 3
    fi
    # The steps whose results it was given (the file the step pod mounts).
    echo "$OVERSEER_STEP done on attempt $OVERSEER_ATTEMPT after" \
      $(grep -o '"step":"[a-z]*"' "$OVERSEER_RESULTS_FILE")
    ;;
  write*)
    echo "$OVERSEER_ITEM" > "$OVERSEER_ITEM.txt"
    echo "wrote $OVERSEER_ITEM.txt"
    ;;
  list*)
    echo "files:" *.txt
    ;;
  hang*)
    echo "$OVERSEER_STEP hangs"
    exec sleep 3600
    ;;
  *)
    echo "no script for: $action" >&2
    exit 2
    ;;
esac
