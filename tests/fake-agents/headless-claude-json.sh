#!/usr/bin/env bash
# `claude --print --output-format stream-json --verbose [--continue] PROMPT`: prints the
# event lines claude prints (init, an assistant message, the closing result with the
# run's usage and cost), in two writes that split the result line, and exits 0.
# Records its arguments. Each run reports 1,000 input tokens (800 from the cache) and
# 50 output tokens.
printf '%s\n' "args: $*" >>"$FAKE_LOG"
echo '{"type":"system","subtype":"init","session_id":"5c1d","model":"claude-sonnet-4-5","tools":["Bash","Edit"]}'
echo '{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"Working on it."}],"usage":{"input_tokens":4,"output_tokens":9}},"session_id":"5c1d"}'
printf '%s' '{"type":"result","subtype":"success","is_error":false,"num_turns":2,"result":"Did part of the work.","session_id":"5c1d",'
sleep 0.3
echo '"total_cost_usd":0.0125,"usage":{"input_tokens":150,"cache_creation_input_tokens":50,"cache_read_input_tokens":800,"output_tokens":50}}'
exit 0
