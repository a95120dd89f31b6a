use clap::Parser;
use overseer::cli::{Cli, Command, CrdFormat};

#[tokio::main]
async fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => {
            overseer::telemetry::init(args.log_format, &args.log_level);
            overseer::operator::run(args).await
        }
        Command::Crd { format } => match format {
            CrdFormat::Yaml => overseer::crd::all_yaml().map(|yaml| print!("{yaml}")),
            CrdFormat::Reference => overseer::crd::reference_markdown().map(|md| print!("{md}")),
        },
    };
    if let Err(error) = result {
        eprintln!("error: {error}");
        std::process::exit(1);
    }
}
