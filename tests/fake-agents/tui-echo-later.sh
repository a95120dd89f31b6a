#!/usr/bin/env bash
# A TUI agent whose screen shows nothing typed (echo off, nothing read) until the
# file $FAKE_DIR/echo-on appears; then, with what was typed before thrown away, it
# takes lines as tui-works-then-idles.sh does.
stty -echo
echo "busy in a way that shows nothing"
while [ ! -e "$FAKE_DIR/echo-on" ]; do sleep 0.2; done
while IFS= read -r -t 0.5 _; do :; done
stty echo
while true; do
  printf '> '
  IFS= read -r line || exit 0
  printf '%s\n' "$line" >>"$FAKE_LOG"
  echo "working on: ${#line} characters"
done
