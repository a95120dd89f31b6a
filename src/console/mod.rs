//! `overseer ui` (and `kubectl overseer ui`): the console in the browser. It serves a
//! page on 127.0.0.1 that shows every Swarm and Goal the person can list, a swarm's
//! members and Events, an agent's session and messages, a goal's steps, and lets them
//! act (send, release, loop, pause, resume, create) with their own kubeconfig: it holds
//! no rights of its own (docs/console.md).

pub mod actions;
pub mod attach;
pub mod context;
pub mod live;
pub mod server;
pub mod view;

use std::sync::Arc;

use kube::Api;
use kube::api::ListParams;

use crate::swarm::Swarm;
use crate::{Error, Result};

/// `overseer ui`'s flags.
#[derive(clap::Args, Debug, Clone)]
pub struct UiArgs {
    /// The port on 127.0.0.1 (0: any free one; the address is printed).
    #[arg(long, default_value_t = 8765)]
    pub port: u16,
    /// Do not open a browser.
    #[arg(long)]
    pub no_open: bool,
}

/// Serves the console until interrupted. `namespace` (`-n`) limits it to one
/// namespace; without it, every namespace when the person may list them all, else the
/// kubeconfig's.
pub async fn run(args: UiArgs, namespace: Option<&str>) -> Result<()> {
    let client =
        crate::kubernetes::timeouts::client(crate::kubernetes::timeouts::ANSWER_DEADLINE).await?;
    let default_namespace = namespace
        .map(str::to_string)
        .unwrap_or_else(|| client.default_namespace().to_string());
    let scope = match namespace {
        Some(ns) => live::Scope::Namespace(ns.to_string()),
        None => {
            let everywhere: Api<Swarm> = Api::all(client.clone());
            match everywhere
                .list_metadata(&ListParams::default().limit(1))
                .await
            {
                Ok(_) => live::Scope::All,
                Err(kube::Error::Api(status)) if status.code == 403 => {
                    live::Scope::Namespace(default_namespace.clone())
                }
                Err(kube::Error::Api(status)) if status.code == 404 => {
                    return Err(Error::CrdsMissing("swarms.overseer.dev".into()));
                }
                Err(error) => return Err(error.into()),
            }
        }
    };
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", args.port)).await?;
    let port = listener.local_addr()?.port();
    let live = live::start(&client, &scope);
    let console = Arc::new(context::Console::new(live, client, port, default_namespace));
    let url = format!("http://127.0.0.1:{port}/");
    let shown = match &scope {
        live::Scope::All => "every namespace".to_string(),
        live::Scope::Namespace(ns) => format!("namespace {ns}"),
    };
    println!("overseer console on {url} ({shown}); Ctrl-C stops it");
    if !args.no_open {
        open(&url);
    }
    axum::serve(listener, server::router(console))
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
        .map_err(|e| Error::Io(std::io::Error::other(e)))
}

/// Opens `url` in the person's browser when the machine has a way to (xdg-open,
/// open); says nothing when it has none: the address is printed.
fn open(url: &str) {
    for opener in ["xdg-open", "open"] {
        let started = std::process::Command::new(opener)
            .arg(url)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn();
        if started.is_ok() {
            return;
        }
    }
}

#[cfg(test)]
mod tests;
