use clap::Parser;
use gpucloud_operator::cli::{Cli, dispatch};

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    match dispatch(cli).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            // User mistakes get one readable line each, never a backtrace.
            eprintln!("error: {err}");
            for cause in err.chain().skip(1) {
                eprintln!("  caused by: {cause}");
            }
            std::process::ExitCode::FAILURE
        }
    }
}
