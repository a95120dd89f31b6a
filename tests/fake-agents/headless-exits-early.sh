#!/usr/bin/env bash
# A headless agent run: prints a little and exits 0, recording its arguments.
# FAKE_RUN_SECONDS makes a run last longer.
printf '%s\n' "args: $*" >>"$FAKE_LOG"
echo "did part of the work"
sleep "${FAKE_RUN_SECONDS:-0}"
exit 0
