//! Shutting a server down: on Ctrl-C or SIGTERM, or when the process that started it goes
//! away (its standard input closes). The operator API, the browser edition and the drill's
//! billing server and workers all stop the same way.

/// Calls `on_end` once standard input reaches its end (or fails), from a thread of its own.
fn on_stdin_end(on_end: impl FnOnce() + Send + 'static) {
    std::thread::spawn(move || {
        let mut sink = [0_u8; 256];
        let mut stdin = std::io::stdin().lock();
        loop {
            match std::io::Read::read(&mut stdin, &mut sink) {
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
        on_end();
    });
}

/// Resolves once standard input reaches its end: a server shuts down gracefully when the
/// drill that started it goes away.
pub fn stdin_end() -> tokio::sync::oneshot::Receiver<()> {
    let (sender, receiver) = tokio::sync::oneshot::channel();
    on_stdin_end(move || {
        let _ = sender.send(());
    });
    receiver
}

/// Exits the process as soon as standard input reaches its end. The drill holds every
/// child's standard input open; if the drill dies, even by SIGKILL, the pipe closes and its
/// children follow instead of running on unsupervised.
pub fn stop_when_stdin_closes(exit_code: i32) {
    on_stdin_end(move || std::process::exit(exit_code));
}

/// Ctrl-C or SIGTERM.
pub async fn stop_signal() {
    let interrupt = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => {}
        () = terminate => {}
    }
}
