#!/usr/bin/env bash
# A TUI agent that stops at a permission prompt, as Claude Code 2.1.332 asks
# (tests/screens/claude-2.1.332/permission-prompt.txt).
echo "about to run: rm -rf build/"
echo " Do you want to proceed?"
echo " ❯ 1. Yes"
echo "   2. No"
IFS= read -r answer
echo "answer: $answer" >>"$FAKE_LOG"
sleep 3600
