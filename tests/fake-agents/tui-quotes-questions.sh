#!/usr/bin/env bash
# A TUI agent whose output quotes a question (as code it read), then goes on working
# for a screenful and sits at its prompt: it asks nobody anything.
echo 'src/ask.rs:  prompt("Do you want to proceed?")'
for i in $(seq 1 20); do echo "reading file $i"; sleep 0.05; done
printf '> '
IFS= read -r _
sleep 3600
