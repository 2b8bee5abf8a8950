//! The play session's simulation behind its lock, handed out so that asking for it twice on
//! one thread is a panic that names the mistake, never a hang.
//!
//! The lock is there only so a session can be shared read-only between threads (the game's
//! systems): `Simulation` is `Send` but not `Sync` (SQLite connections). A `std` mutex is not
//! reentrant, so a view helper that asked for the simulation while its caller held it waited
//! forever (stop 29: every finished run's web view hung in CI). Each thread notes the locks
//! it holds; a second ask for the same one on the same thread panics at once, saying to pass
//! the `&Simulation` already held. Other threads still wait their turn as before.

use std::cell::RefCell;
use std::ops::Deref;
use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::simulator::Simulation;

thread_local! {
    /// The simulation locks this thread holds now, by address.
    static HELD_HERE: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
}

/// The simulation of a session, behind the lock that makes the session shareable.
#[derive(Debug)]
pub(crate) struct SimulationLock(Mutex<Simulation>);

/// The simulation, held: read it through `Deref`; the lock is given back when this is dropped.
#[derive(Debug)]
pub struct SimulationGuard<'a> {
    guard: MutexGuard<'a, Simulation>,
    holder: usize,
}

impl SimulationLock {
    pub(crate) fn new(simulation: Simulation) -> SimulationLock {
        SimulationLock(Mutex::new(simulation))
    }

    fn address(&self) -> usize {
        std::ptr::from_ref(self) as usize
    }

    /// The simulation, held by this thread until the guard drops.
    ///
    /// # Panics
    /// When this thread holds it already: locking again would wait forever.
    pub(crate) fn lock(&self) -> SimulationGuard<'_> {
        let holder = self.address();
        HELD_HERE.with_borrow_mut(|held| {
            assert!(
                !held.contains(&holder),
                "the play session's simulation is already held by this thread (a caller up the \
                 stack locked it): pass that &Simulation down instead of locking it again, which \
                 would wait forever"
            );
            held.push(holder);
        });
        let guard = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        SimulationGuard { guard, holder }
    }

    /// The simulation, to change: `&mut self` proves no guard is out, so there is no lock.
    pub(crate) fn get_mut(&mut self) -> &mut Simulation {
        self.0.get_mut().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Deref for SimulationGuard<'_> {
    type Target = Simulation;
    fn deref(&self) -> &Simulation {
        &self.guard
    }
}

impl Drop for SimulationGuard<'_> {
    fn drop(&mut self) {
        HELD_HERE.with_borrow_mut(|held| {
            let position = held.iter().rposition(|holder| *holder == self.holder);
            assert!(
                position.is_some(),
                "a simulation guard drops a lock this thread did not note"
            );
            if let Some(position) = position {
                held.swap_remove(position);
            }
        });
    }
}
