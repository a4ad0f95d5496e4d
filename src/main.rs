use clap::Parser;
use gpucloud_operator::cli::{Cli, dispatch};
use gpucloud_operator::plugin;

// jemalloc rather than glibc's allocator. Reaching Ready for many objects allocates in
// bursts (listings of every remote object, thousands of passes at once) from several
// threads; glibc keeps what those bursts free in its per-thread arenas, where jemalloc
// hands freed pages back to the system, even when the operator is idle. Its settings are
// compiled into it, from `.cargo/config.toml` (see there why).
#[cfg(all(not(feature = "heap-profile"), not(target_env = "msvc")))]
#[global_allocator]
static ALLOC: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

// Built with `--features heap-profile`: every allocation goes through dhat, which writes a
// heap profile (view it at https://nnethercote.github.io/dh_view/dh_view.html) when the
// process gets SIGUSR2 (the heap as it is at that moment, plus the peak so far) or exits.
#[cfg(feature = "heap-profile")]
#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

#[cfg(feature = "heap-profile")]
mod heap_profile {
    use std::sync::{Arc, Mutex};

    /// Where the profile goes: `GPUCLOUD_HEAP_PROFILE`, or `dhat-heap-PID.json` here.
    fn file_name() -> std::path::PathBuf {
        std::env::var_os("GPUCLOUD_HEAP_PROFILE")
            .map(Into::into)
            .unwrap_or_else(|| format!("dhat-heap-{}.json", std::process::id()).into())
    }

    /// Starts recording. The returned guard writes the profile when dropped (at exit),
    /// unless SIGUSR2 wrote it first: a steady state is only seen while the process runs,
    /// and what is left at exit says little.
    pub fn start() -> Arc<Mutex<Option<dhat::Profiler>>> {
        let profiler = dhat::Profiler::builder().file_name(file_name()).build();
        let guard = Arc::new(Mutex::new(Some(profiler)));
        let on_signal = guard.clone();
        tokio::spawn(async move {
            use tokio::signal::unix::{SignalKind, signal};
            let Ok(mut usr2) = signal(SignalKind::user_defined2()) else {
                return;
            };
            if usr2.recv().await.is_some() {
                let profiler = on_signal.lock().ok().and_then(|mut p| p.take());
                drop(profiler);
                eprintln!("heap profile written to {}", file_name().display());
            }
        });
        guard
    }
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    #[cfg(feature = "heap-profile")]
    let _heap_profile = heap_profile::start();
    // Installed as `kubectl-gpucloud`, the binary is the kubectl plugin.
    let argv0 = std::env::args().next().unwrap_or_default();
    let outcome = if plugin::invoked_as_plugin(&argv0) {
        plugin::run(plugin::PluginCli::parse()).await
    } else {
        dispatch(Cli::parse()).await
    };
    match outcome {
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
