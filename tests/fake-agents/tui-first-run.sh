#!/usr/bin/env bash
# A TUI agent's first run, as Claude Code 2.1.332's (tests/screens/claude-2.1.332): the
# folder-trust dialog, then the autonomy-mode warning, each defaulting to "No, exit":
# Down, then Enter accepts; anything else declines. Each answered dialog is cleared, as
# a TUI redraws. Only then its prompt, where it works on what it is sent.
accept() {
  IFS= read -rsn3 key
  if [[ $key != $'\e[B' ]]; then echo "declined" >>"$FAKE_LOG"; exit 1; fi
  IFS= read -r _
  printf '\033[2J\033[H'
}
echo " Quick safety check: Is this a project you created or one you trust?"
echo " ❯ No, exit"
echo "   Yes, I trust this folder"
accept
echo "  WARNING: Claude Code running in Bypass Permissions mode"
echo "  ❯ No, exit"
echo "    Yes, I accept"
accept
echo "first run done" >>"$FAKE_LOG"
while true; do
  printf '> '
  IFS= read -r line || exit 0
  printf '%s\n' "$line" >>"$FAKE_LOG"
  echo "working on: ${#line} characters"
  sleep 0.5
done
