#!/usr/bin/env bash
# A TUI agent still starting: its input box shows what is typed but Enter does nothing
# until the file $FAKE_DIR/ready appears, as Claude Code and Copilot do while they load.
# Once ready, Enter submits the line: appended to $FAKE_LOG, the box emptied.
stty -icanon -echo
buffer=""
printf '> '
while IFS= read -rsn1 -d '' c; do
  if [ "$c" = $'\n' ] || [ "$c" = $'\r' ]; then
    [ -e "$FAKE_DIR/ready" ] || continue
    printf '%s\n' "$buffer" >>"$FAKE_LOG"
    printf '\nworking on: %s characters\n> ' "${#buffer}"
    buffer=""
  else
    buffer+="$c"
    printf '%s' "$c"
  fi
done
