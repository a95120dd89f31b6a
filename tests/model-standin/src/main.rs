//! `model-standin --listen ADDRESS:PORT --scenario FILE [--log FILE]`: serves the
//! scenario (JSON, see scenario.rs) until interrupted, appending a JSON line per request
//! to the log. For trying a real CLI by hand and for `make real-cli-versions`.

use std::net::SocketAddr;

use model_standin::{Scenario, Server};

fn usage() -> ! {
    eprintln!("usage: model-standin --listen ADDRESS:PORT --scenario FILE [--log FILE]");
    std::process::exit(2)
}

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let (mut listen, mut scenario, mut log) = (None, None, None);
    while let Some(flag) = args.next() {
        let value = args.next().unwrap_or_else(|| usage());
        match flag.as_str() {
            "--listen" => listen = Some(value),
            "--scenario" => scenario = Some(value),
            "--log" => log = Some(value),
            _ => usage(),
        }
    }
    let listen: SocketAddr = listen
        .unwrap_or_else(|| usage())
        .parse()
        .unwrap_or_else(|error| {
            eprintln!("model-standin: --listen: {error}");
            std::process::exit(2)
        });
    let path = scenario.unwrap_or_else(|| usage());
    let scenario: Scenario = std::fs::read(&path)
        .map_err(|e| e.to_string())
        .and_then(|bytes| serde_json::from_slice(&bytes).map_err(|e| e.to_string()))
        .unwrap_or_else(|error| {
            eprintln!("model-standin: {path}: {error}");
            std::process::exit(2)
        });
    let log = log.map(|path| {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .unwrap_or_else(|error| {
                eprintln!("model-standin: {path}: {error}");
                std::process::exit(2)
            })
    });
    let server = Server::start_logging(listen, scenario, log)
        .await
        .unwrap_or_else(|error| {
            eprintln!("model-standin: listening on {listen}: {error}");
            std::process::exit(1)
        });
    eprintln!("model-standin: serving on {}", server.url);
    let _ = tokio::signal::ctrl_c().await;
}
