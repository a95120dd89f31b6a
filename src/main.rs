use clap::Parser;
use overseer::cli::{Cli, Command, CrdFormat, GoalCommand};

#[tokio::main]
async fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => {
            overseer::telemetry::init(args.log_format, &args.log_level);
            overseer::operator::run(args).await
        }
        Command::Goal {
            command: GoalCommand::Resume { name, namespace },
        } => overseer::goal::resume(&name, namespace.as_deref()).await,
        Command::Step { command } => match overseer::step::run(&command).await {
            Ok(code) => std::process::exit(code),
            Err(error) => Err(error.into()),
        },
        Command::Result => overseer::step::set_result().await.map_err(Into::into),
        Command::Install { dest } => overseer::step::install(&dest).map_err(Into::into),
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
