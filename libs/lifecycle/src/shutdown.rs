use tokio::signal::unix::{SignalKind, signal};
use tokio_util::sync::CancellationToken;

/// The process-wide stop trigger. Cloned freely; [`Shutdown::trigger`] is idempotent.
#[derive(Clone, Default)]
pub struct Shutdown {
    token: CancellationToken,
}

impl Shutdown {
    pub fn new() -> Self {
        Self::default()
    }

    /// Starts the drain (from a signal, a test, or a fatal error in a service).
    pub fn trigger(&self) {
        self.token.cancel();
    }

    pub fn is_triggered(&self) -> bool {
        self.token.is_cancelled()
    }

    /// Completes when the drain starts.
    pub async fn wait(&self) {
        self.token.cancelled().await
    }

    /// A token cancelled with the process, for tasks and servers.
    pub fn token(&self) -> CancellationToken {
        self.token.clone()
    }
}

/// Triggers `shutdown` on the first SIGTERM or SIGINT; a second one exits at once (130), for
/// an operator who does not want to wait for the drain.
pub fn listen_for_signals(shutdown: Shutdown) -> std::io::Result<()> {
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    tokio::spawn(async move {
        let name = tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = int.recv() => "SIGINT",
        };
        tracing::info!(signal = name, "draining; send the signal again to exit at once");
        shutdown.trigger();
        tokio::select! {
            _ = term.recv() => {},
            _ = int.recv() => {},
        }
        tracing::warn!("second signal: exiting without finishing the drain");
        std::process::exit(130);
    });
    Ok(())
}
