//! The shim's local socket: one JSON request per connection (`overseer input`,
//! `overseer loop`), each answered by the supervision loop.

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{mpsc, oneshot};
use tracing::warn;

use super::protocol::{self, Reply, Request};

/// Serves the socket: one request per connection, answered by the main loop.
pub(super) async fn accept(
    listener: UnixListener,
    requests: mpsc::Sender<(Request, oneshot::Sender<Reply>)>,
) {
    while let Ok((stream, _)) = listener.accept().await {
        let requests = requests.clone();
        tokio::spawn(async move {
            if let Err(error) = serve(stream, requests).await {
                warn!(%error, "socket client failed");
            }
        });
    }
}

async fn serve(
    stream: UnixStream,
    requests: mpsc::Sender<(Request, oneshot::Sender<Reply>)>,
) -> std::io::Result<()> {
    let (read, mut write) = stream.into_split();
    let mut line = String::new();
    BufReader::new(read.take(protocol::MAX_MESSAGE_BYTES as u64 * 2))
        .read_line(&mut line)
        .await?;
    let reply = match serde_json::from_str::<Request>(&line) {
        Err(error) => Reply::refused(format!("bad request: {error}")),
        Ok(request) => {
            let (tx, rx) = oneshot::channel();
            if requests.send((request, tx)).await.is_err() {
                Reply::refused("the shim is stopping")
            } else {
                rx.await
                    .unwrap_or_else(|_| Reply::refused("the shim is stopping"))
            }
        }
    };
    let mut out = serde_json::to_vec(&reply)?;
    out.push(b'\n');
    write.write_all(&out).await
}
