#!/usr/bin/env bash
# A TUI agent whose screen never shows what is typed (echo off, nothing read).
stty -echo
echo "busy in a way that shows nothing"
sleep 3600
