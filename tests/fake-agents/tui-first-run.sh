#!/usr/bin/env bash
# A TUI agent's first run, as Claude Code's: the folder-trust dialog (Enter takes the
# default, "Yes"), then the autonomy-mode warning (its default is "No, exit": Down,
# then Enter accepts). Each answered dialog is cleared, as a TUI redraws. Only then its
# prompt, where it works on what it is sent.
echo "Do you trust the files in this folder?"
echo " ❯ 1. Yes, proceed"
echo "   2. No, exit"
IFS= read -r _
printf '\033[2J\033[H'
echo "WARNING: Claude Code running in Bypass Permissions mode"
echo " ❯ 1. No, exit"
echo "   2. Yes, I accept"
IFS= read -rsn3 key
if [[ $key != $'\e[B' ]]; then echo "declined" >>"$FAKE_LOG"; exit 1; fi
IFS= read -r _
printf '\033[2J\033[H'
echo "first run done" >>"$FAKE_LOG"
while true; do
  printf '> '
  IFS= read -r line || exit 0
  printf '%s\n' "$line" >>"$FAKE_LOG"
  echo "working on: ${#line} characters"
  sleep 0.5
done
