//! A turn's requests in flight at once: each attempt's send is a future of its own, kept in a
//! `FuturesUnordered` beside the others and polled beside whatever the driver awaits meanwhile
//! (a backoff, a look-up).

use std::collections::VecDeque;
use std::future::{Future, poll_fn};
use std::pin::{Pin, pin};
use std::task::Poll;
use std::time::Duration;

use futures_util::stream::{FuturesUnordered, StreamExt};

use super::AsyncTools;
use crate::execution::{Attempt, Ended, Sending};
use crate::executor::Drive;
use crate::key::IdempotencyKey;

/// One attempt's request, as a future that owns its send and borrows only the tools.
pub(super) type Flight<'t> = Pin<Box<dyn Future<Output = Ended> + Send + 't>>;

/// The request `drive` (the send of attempt `attempt` of `key`) asks for, limited to
/// `timeout` when there is one (past it, the attempt's future is dropped: the request may
/// have left, so it timed out).
pub(super) fn flight<'t>(
    tools: &'t impl AsyncTools,
    drive: Drive,
    (key, attempt): (IdempotencyKey, u32),
    timeout: Option<Duration>,
) -> Flight<'t> {
    Box::pin(async move {
        let how = match Sending::of(&drive) {
            Some(sending) => {
                let sent = tools.send(&sending);
                match timeout {
                    Some(limit) => tokio::time::timeout(limit, sent).await.unwrap_or(Attempt::TimedOut),
                    None => sent.await,
                }
            }
            // Never: only a send is set out. Were it not one, nothing was sent.
            None => Attempt::NotSent {
                reason: "the driver set out a step that is not a send".to_owned(),
            },
        };
        Ended { key, attempt, how }
    })
}

/// A batch's requests in flight, and those that ended before the machine was free for them.
#[derive(Default)]
pub(super) struct Flights<'t> {
    /// The requests out; each is polled only when its own waker says it can go on.
    out: FuturesUnordered<Flight<'t>>,
    /// Requests that ended while the driver awaited something else, in the order they ended.
    ended: VecDeque<Ended>,
}

impl<'t> Flights<'t> {
    /// A request left and its answer is to come.
    pub(super) fn set_out(&mut self, flight: Flight<'t>) {
        self.out.push(flight);
    }

    /// A request that ended as it was set out: the machine hears it when it is free.
    pub(super) fn ended_at_once(&mut self, ended: Ended) {
        self.ended.push_back(ended);
    }

    /// The next request to end, in the order they end; `None` when none is out.
    pub(super) async fn next(&mut self) -> Option<Ended> {
        match self.ended.pop_front() {
            Some(ended) => Some(ended),
            None => self.out.next().await,
        }
    }

    /// `future`, awaited while the requests out go on (a backoff, a look-up, a paused run's
    /// poll must not hold up the batch's other calls); those that end meanwhile wait for
    /// [`Flights::next`], in the order they ended.
    pub(super) async fn alongside<F: Future>(&mut self, future: F) -> F::Output {
        let mut future = pin!(future);
        poll_fn(|context| {
            while let Poll::Ready(Some(ended)) = self.out.poll_next_unpin(context) {
                self.ended.push_back(ended);
            }
            future.as_mut().poll(context)
        })
        .await
    }
}
