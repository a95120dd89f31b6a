// The attach page: xterm.js (vendored, src/console/assets/vendor/xterm) joined to the
// agent's tmux session through the console's WebSocket (src/console/attach.rs).
"use strict";

const csrf = document.querySelector('meta[name="csrf-token"]').content;
const [namespace, name] = location.hash.replace(/^#/, "").split("/").map(decodeURIComponent);
const said = document.getElementById("connection");
document.getElementById("title").textContent = `Attached to ${name}`;
document.getElementById("back").href = `/#/agent/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}`;
document.title = `Attach ${name} · overseer`;

const terminal = new Terminal({ cols: 120, rows: 36, cursorBlink: true, screenReaderMode: true });
terminal.open(document.getElementById("terminal"));
terminal.focus();

const query = new URLSearchParams({ namespace, name });
const socket = new WebSocket(`ws://${location.host}/api/attach?${query}`, [`overseer.csrf.${csrf}`]);
socket.binaryType = "arraybuffer";
const encoder = new TextEncoder();
const size = () => JSON.stringify({ cols: terminal.cols, rows: terminal.rows });

socket.addEventListener("open", () => {
  said.textContent = "attached";
  socket.send(size());
});
socket.addEventListener("message", (event) => {
  if (typeof event.data === "string") {
    const message = JSON.parse(event.data);
    if (message.end) {
      terminal.write(`\r\n[${message.end}]\r\n`);
      said.textContent = message.end;
    }
    return;
  }
  terminal.write(new Uint8Array(event.data));
});
socket.addEventListener("close", () => {
  if (said.textContent === "attached" || said.textContent === "connecting…") said.textContent = "detached";
});
terminal.onData((keys) => {
  if (socket.readyState === WebSocket.OPEN) socket.send(encoder.encode(keys));
});
terminal.onResize(() => {
  if (socket.readyState === WebSocket.OPEN) socket.send(size());
});
