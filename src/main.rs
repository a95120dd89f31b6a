use clap::Parser;

#[tokio::main]
async fn main() {
    std::process::exit(overseer::cli::dispatch(overseer::cli::Cli::parse()).await);
}
