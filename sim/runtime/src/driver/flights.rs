//! A turn's requests in flight at once: each attempt's send is a future of its own, polled
//! beside the others and beside whatever the driver awaits meanwhile (a backoff, a look-up).

use std::collections::VecDeque;
use std::future::{Future, poll_fn};
use std::pin::{Pin, pin};
use std::task::{Context, Poll};
use std::time::Duration;

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
    pub(super) out: Vec<Flight<'t>>,
    pub(super) ended: VecDeque<Ended>,
}

impl Flights<'_> {
    /// Polls every request out; those that ended wait in `ended`, in the order they ended.
    fn poll_out(&mut self, context: &mut Context<'_>) {
        let mut index = 0;
        while index < self.out.len() {
            match self.out[index].as_mut().poll(context) {
                Poll::Ready(ended) => {
                    self.ended.push_back(ended);
                    drop(self.out.swap_remove(index));
                }
                Poll::Pending => index += 1,
            }
        }
    }

    /// The next request to end, in the order they end; `None` when none is out.
    pub(super) async fn next(&mut self) -> Option<Ended> {
        poll_fn(|context| {
            self.poll_out(context);
            match self.ended.pop_front() {
                Some(ended) => Poll::Ready(Some(ended)),
                None if self.out.is_empty() => Poll::Ready(None),
                None => Poll::Pending,
            }
        })
        .await
    }

    /// `future`, awaited while the requests out go on (a backoff, a look-up, a paused run's
    /// poll must not hold up the batch's other calls).
    pub(super) async fn alongside<F: Future>(&mut self, future: F) -> F::Output {
        let mut future = pin!(future);
        poll_fn(|context| {
            self.poll_out(context);
            future.as_mut().poll(context)
        })
        .await
    }
}
