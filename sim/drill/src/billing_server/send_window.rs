//! The send window. A credit request may carry `Twice-Sent-At-Ms`: when its sender wrote
//! it down as sent (ms since the Unix epoch; the worker stamps the ledger's write of its
//! attempt). Billing applies it only up to `--request-window-ms` after that stamp, checked at
//! the moment it would apply it: a request that arrives later (its process was paused, or its
//! host cut off and the packets retransmitted after the cut healed) is refused with 422 and
//! pays nothing, unless billing already holds a credit under its key (that is answered as a
//! repeat). This is what lets a lookup that finds nothing prove something: once the window and
//! the settle time have passed since the stamp, no request with the key can still land. Real
//! providers bound late requests the same way (a signed request's timestamp is refused once it
//! is minutes old); without such a bound, "nothing under the key" is only ever "not yet".

use twice_world::billing::{Billing, CreditRequest};

/// The header a worker stamps its request's send in, ms since the Unix epoch (see the send
/// window in the module's documentation).
pub const SENT_AT_HEADER: &str = "twice-sent-at-ms";
/// The send window beyond `--latency-ms` unless `--request-window-ms` says otherwise: long
/// enough for a request on a loaded machine (seen applied 158 ms after its stamp at 60 ms of
/// latency), short enough that an operator waits about half a second before "nothing there" proves
/// anything.
pub const REQUEST_WINDOW_BEYOND_LATENCY_MS: u32 = 500;
/// The longest send window: a person waits this long at most before "nothing there" is proof.
pub const REQUEST_WINDOW_MS_MAX: u32 = 600_000;

/// Why a credit stamped `sent_at_ms` is refused at `now_ms`, if it is: it arrived later than
/// the send window after its stamp, and its key is not one billing still honours (a repeat
/// pays nothing, so it is answered as one whenever it comes).
pub(super) fn too_late(
    billing: &Billing,
    request: &CreditRequest,
    sent_at_ms: u64,
    request_window_ms: u64,
    now_ms: u64,
) -> Option<String> {
    let late_ms = now_ms.saturating_sub(sent_at_ms);
    if late_ms <= request_window_ms {
        return None;
    }
    // Billing's own rule for a repeat, retention included: a key it has forgotten would be
    // paid again, so a late request under it is refused like any other.
    (!billing.holds_key_of(request, now_ms)).then(|| {
        format!(
            "the request was sent {late_ms} ms ago, past billing's {request_window_ms} ms window: refused, nothing paid"
        )
    })
}

/// A stamp that billing's clock may read later: ms since the Unix epoch, not ahead of `now_ms`
/// by more than a second (a stamp from the future would stretch the window it bounds).
pub(super) fn sent_at(value: &axum::http::HeaderValue, now_ms: u64) -> Result<u64, String> {
    const AHEAD_MS_MAX: u64 = 1_000;
    let stamp = value
        .to_str()
        .ok()
        .and_then(|text| text.trim().parse::<u64>().ok())
        .ok_or_else(|| "give the send's time in ms since the Unix epoch, digits only".to_owned())?;
    if stamp > now_ms.saturating_add(AHEAD_MS_MAX) {
        return Err(format!(
            "{stamp} is {} ms ahead of billing's clock (at most {AHEAD_MS_MAX})",
            stamp - now_ms
        ));
    }
    Ok(stamp)
}

/// The send window `--request-window-ms` asks for (default: `latency_ms` plus
/// [`REQUEST_WINDOW_BEYOND_LATENCY_MS`]) for a billing whose way in may take up to
/// `latency_ms`; the error, in words naming the flags, when it cannot be meant.
pub fn request_window(requested_ms: Option<u32>, latency_ms: u32) -> Result<u32, String> {
    let request_window_ms = requested_ms.unwrap_or(latency_ms + REQUEST_WINDOW_BEYOND_LATENCY_MS);
    if request_window_ms == 0 || request_window_ms > REQUEST_WINDOW_MS_MAX {
        return Err(format!(
            "--request-window-ms {request_window_ms} must be 1 to {REQUEST_WINDOW_MS_MAX}"
        ));
    }
    if request_window_ms <= latency_ms {
        return Err(format!(
            "--request-window-ms {request_window_ms} must be more than --latency-ms {latency_ms}: a request's way in \
             alone may take that long, and every one would be refused"
        ));
    }
    Ok(request_window_ms)
}
