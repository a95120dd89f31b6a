#!/usr/bin/env bash
# A TUI agent that stops at a permission prompt (a pattern of the `pi` runtime).
echo "about to run: rm -rf build/"
printf 'Allow? (y/n) '
IFS= read -r answer
echo "answer: $answer" >>"$FAKE_LOG"
sleep 3600
