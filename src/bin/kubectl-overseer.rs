//! The kubectl plugin: `kubectl overseer ps` runs this binary, which is `overseer`.
use clap::Parser;

#[tokio::main]
async fn main() {
    std::process::exit(overseer::cli::dispatch(overseer::cli::Cli::parse()).await);
}
