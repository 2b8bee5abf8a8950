//! Billing for one level played through the runtime protocol: the same server as `twice-sim
//! billing` (its router, its store, its [`Billing`]), started inside the conductor on a
//! loopback port, over the level's accounts, key handling and terms, and reading the level's
//! time from each request ([`Clock::Header`]), which the protocol's proxy stamps.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::send_window::REQUEST_WINDOW_MS_MAX;
use super::{Clock, Shared, World, router};
use crate::billing_store::{BillingStore, Operation, OwnerChangedBy};
use twice_world::billing::{Account, Answer, Billing, KeyHandling, Terms};
use twice_world::level::ScriptedOwnerChange;

/// A billing server running in this process.
#[derive(Debug)]
pub struct InProcessBilling {
    address: SocketAddr,
    shared: Arc<Shared>,
    stop: Option<oneshot::Sender<()>>,
    served: Option<JoinHandle<()>>,
}

impl InProcessBilling {
    /// Starts billing over a new file `db` on a free loopback port. Must be called inside a
    /// tokio runtime, which serves it until [`InProcessBilling::stop`].
    pub async fn start(
        db: &Path,
        key_handling: KeyHandling,
        terms: Terms,
        accounts: &[Account],
    ) -> Result<InProcessBilling, String> {
        let (store, billing) = BillingStore::open_with_terms(db, key_handling, terms, accounts)
            .map_err(|error| format!("billing's file {}: {error}", db.display()))?;
        let shared = Arc::new(Shared {
            world: Mutex::new(World { billing, store }),
            rng: Mutex::new(ChaCha8Rng::seed_from_u64(1)),
            // No latency of its own: the proxy in front plays the level's wire.
            latency_ms: 0,
            // Nothing stamped with a send time reaches it (the proxy strips the stamp: the
            // level's wire delivers a request or loses it, as the simulator's does).
            request_window_ms: u64::from(REQUEST_WINDOW_MS_MAX),
            clock: Clock::Header,
            in_flight: AtomicU64::new(0),
            in_flight_keys: Mutex::new(std::collections::BTreeMap::new()),
        });
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
            .await
            .map_err(|error| format!("billing cannot listen on loopback: {error}"))?;
        let address = listener
            .local_addr()
            .map_err(|error| format!("billing cannot read its address: {error}"))?;
        let (stop, stopped) = oneshot::channel::<()>();
        let app = router(Arc::clone(&shared));
        let served = tokio::spawn(async move {
            let shutdown = async move {
                let _ = stopped.await;
            };
            if let Err(error) = axum::serve(listener, app).with_graceful_shutdown(shutdown).await {
                eprintln!("warning: the level's billing stopped serving: {error}");
            }
        });
        Ok(InProcessBilling {
            address,
            shared,
            stop: Some(stop),
            served: Some(served),
        })
    }

    /// Where it listens.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Its state now: every account and entry (the checker's ground truth).
    pub fn billing(&self) -> Billing {
        self.shared.world().billing.clone()
    }

    /// Someone outside the agent sets an account's owner at the level's time `now_ms` (a
    /// level's scripted change): applied and stored as any request is, not through the wire.
    pub fn owner_changed_by(&self, change: &ScriptedOwnerChange, now_ms: u64) -> Result<Answer, String> {
        let operation = Operation::OwnerChangedBy(OwnerChangedBy {
            account: change.account.clone(),
            owner: change.owner.clone(),
            by: change.by.clone(),
        });
        self.shared
            .apply(&operation, None, Some(now_ms))
            .map(|(answer, _)| answer)
            .map_err(|error| format!("billing could not record {}'s owner change: {error}", change.by))
    }

    /// Stops serving; what it applied stays in its file.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(served) = self.served.take() {
            let _ = served.await;
        }
    }
}
