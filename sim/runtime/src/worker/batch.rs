//! A batch of calls ([`crate::batch::Batch`]): several requests in flight at once.
//!
//! The machine still works on one call at a time — reserving, recording, looking up are each
//! one call's ledger steps — but once a call's request has left and the driver says so
//! ([`Input::Sent`]), that call is set aside (in flight) and the next call of the batch is
//! begun. Answers and timeouts are matched to their call by key and attempt, in any order;
//! one that comes while the machine is busy with another call waits (in arrival order) until
//! the machine is free. A call whose outcome stays unknown under `on_indeterminate: pause` is
//! set aside too, and the run waits on every such call once the others are told. The
//! checkpoint is saved once, after the batch.
//!
//! A driver that never says [`Input::Sent`] runs a batch one call after another, as it runs
//! single calls: nothing breaks, only nothing overlaps.

use std::collections::VecDeque;

use super::*;

/// What a worker knows of the batch it runs.
#[derive(Debug, Default)]
pub(super) struct BatchRun {
    /// Calls not begun yet, in the model's order.
    queued: VecDeque<ToolCall>,
    /// Calls whose request left and whose answer is awaited, set aside while the machine
    /// works on another call.
    in_flight: Vec<CallContext>,
    /// Answers and timeouts for calls in flight that came while the machine was busy with
    /// another call: taken, oldest first, when it is free.
    early: VecDeque<Input>,
    /// Calls left unknown that the run waits on (`on_indeterminate: pause`), oldest first.
    paused: Vec<CallContext>,
    /// The time of the input being handled: a call begun from the queue is reserved then.
    now_ms: u64,
}

impl Worker {
    /// The calls whose requests are out and whose answers the machine waits for, with the
    /// attempt each waits on: the call being worked on (if its request is out) and every call
    /// of a batch set aside in flight. A driver that got no command back from
    /// [`Worker::handle`] feeds one of their answers (or timeouts) next.
    pub fn in_flight(&self) -> Vec<(&IdempotencyKey, u32)> {
        let current = self.call.iter();
        let set_aside = self.batch.iter().flat_map(|batch| batch.in_flight.iter());
        current
            .chain(set_aside)
            .filter_map(|context| context.awaiting_attempt.map(|attempt| (&context.key, attempt)))
            .collect()
    }

    /// Whether the worker waits for the answer to attempt `attempt` of the call `key` (the
    /// call being worked on, or one of a batch's set aside in flight).
    pub fn awaits(&self, key: &str, attempt: u32) -> bool {
        let waits = |context: &CallContext| context.awaiting_attempt == Some(attempt) && context.key.as_str() == key;
        self.call.as_ref().is_some_and(waits)
            || self
                .batch
                .as_ref()
                .is_some_and(|batch| batch.in_flight.iter().any(waits))
    }

    /// Whether the worker runs a batch of several calls: a driver that can keep several
    /// requests out feeds [`Input::Sent`] once a request of it has left.
    pub fn runs_batch(&self) -> bool {
        self.batch.is_some()
    }

    /// Notes the time of the input being handled, for a batch's next call.
    pub(super) fn batch_clock(&mut self, now_ms: u64) {
        if let Some(batch) = self.batch.as_mut() {
            batch.now_ms = now_ms;
        }
    }

    /// The model made several calls: the first is begun now, the rest when the one before
    /// has left.
    pub(super) fn begin_batch(&mut self, now_ms: u64, calls: Vec<ToolCall>) -> Option<Command> {
        self.batch = Some(Box::new(BatchRun {
            queued: calls.into(),
            now_ms,
            ..BatchRun::default()
        }));
        self.batch_next()
    }

    /// The driver says the current call's request left: it is set aside in flight, and the
    /// machine goes on with the batch. Outside a batch (or about another send) it changes
    /// nothing: the machine waits for the answer, as it did.
    pub(super) fn sent(&mut self, key: &IdempotencyKey, attempt: u32) -> Option<Command> {
        let current = self
            .call
            .as_ref()
            .is_some_and(|context| &context.key == key && context.awaiting_attempt == Some(attempt));
        if !current || self.batch.is_none() {
            return None;
        }
        let context = self.call.take().expect("checked: the current call");
        self.batch.as_mut().expect("checked: a batch").in_flight.push(context);
        self.batch_next()
    }

    /// An answer or a timeout for a call of the batch set aside in flight. When the machine
    /// is busy with another call the input waits (cloned aside; `true`: nothing more to do
    /// now). When it is free the call becomes the current one (`false`: the input is then
    /// handled as every answer is). About no such call: `false`, and nothing changes.
    pub(super) fn held_for_later(&mut self, input: &Input) -> bool {
        let (Input::Response { key, attempt, .. }
        | Input::TimedOut { key, attempt }
        | Input::Unknown { key, attempt, .. }) = input
        else {
            return false;
        };
        let Some(batch) = self.batch.as_mut() else {
            return false;
        };
        let Some(index) = batch
            .in_flight
            .iter()
            .position(|context| &context.key == key && context.awaiting_attempt == Some(*attempt))
        else {
            return false;
        };
        if self.call.is_some() {
            batch.early.push_back(input.clone());
            return true;
        }
        self.call = Some(batch.in_flight.remove(index));
        false
    }

    /// A call of the batch is told (`told` is in the run's state already): the machine is
    /// free; it begins the next call, takes an answer that waited, waits for answers still
    /// out, or, the batch over, saves the run once.
    pub(super) fn batch_next(&mut self) -> Option<Command> {
        let batch = self.batch.as_mut().expect("a batch is run");
        let now_ms = batch.now_ms;
        if let Some(call) = batch.queued.pop_front() {
            return self.begin_one(now_ms, call);
        }
        if let Some(input) = batch.early.pop_front() {
            // Free now: the call it answers leaves the set aside and becomes the current one.
            let held = self.held_for_later(&input);
            assert!(!held, "a free machine takes an answer at once");
            return self.dispatch(now_ms, input);
        }
        if !batch.in_flight.is_empty() {
            // Free, with requests out: the next input is one of their answers.
            self.state = WorkerState::Calling;
            self.awaiting = order::Awaiting::Answer;
            return None;
        }
        let paused = std::mem::take(&mut batch.paused);
        self.batch = None;
        let mut paused = paused.into_iter();
        let Some(first) = paused.next() else {
            self.run.status = RunStatus::Running;
            self.run.pending = None;
            return self.save(AfterSave::AskModel);
        };
        self.run.status = RunStatus::AwaitingReconciliation {
            key: first.key.to_string(),
        };
        self.run.pending = Some(first.call.clone());
        self.run.pending_calls = paused.map(|context| context.call).collect();
        self.call = Some(first);
        self.save(AfterSave::Park)
    }

    /// Under `on_indeterminate: pause`, a call of a batch left unknown: set aside; the run
    /// waits on it once the batch's other calls are told. `None` outside a batch.
    pub(super) fn pause_in_batch(&mut self) -> Option<Option<Command>> {
        self.batch.as_ref()?;
        self.note(Guard::PauseOnIndeterminate, Held::Paused);
        let context = self.call.take().expect("a call is unknown");
        self.batch.as_mut().expect("checked: a batch").paused.push(context);
        Some(self.batch_next())
    }

    /// A paused run's call is told and more calls of its batch wait: the next becomes the
    /// one the run waits on (saved first, so a crash finds it), then its record is read.
    pub(super) fn next_pending(&mut self) -> Option<Option<Command>> {
        if self.run.pending_calls.is_empty() {
            return None;
        }
        let call = self.run.pending_calls.remove(0);
        if let Err(refused) = self.begin_call(call.clone()) {
            return Some(self.wait_for_person(WaitReason::PendingCallRefused(refused)));
        }
        self.run.status = RunStatus::AwaitingReconciliation {
            key: self.context().key.to_string(),
        };
        self.run.pending = Some(call);
        Some(self.save(AfterSave::ReadPending))
    }
}
