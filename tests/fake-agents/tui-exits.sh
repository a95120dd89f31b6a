#!/usr/bin/env bash
# A TUI agent that quits with exit code 4; started again (with the resume flag) it
# records its arguments and reads its input like the idle agent.
printf '%s\n' "args: $*" >>"$FAKE_LOG"
if [ "${1:-}" != "--continue" ]; then echo "giving up"; exit 4; fi
echo "resumed"
printf '> '
IFS= read -r line
printf '%s\n' "$line" >>"$FAKE_LOG"
sleep 3600
