//! Where billing reads the time. On its own, a billing server reads the machine's clock. Behind
//! the runtime protocol's proxy it reads the level's time from each request instead: the
//! protocol plays a level's events in the simulator's order, not at the simulator's pace, so a
//! key's retention and a lookup's settle time are counted in the level's milliseconds there,
//! as the simulator counts them.

use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;

use super::refusal;

/// The header the runtime protocol's proxy stamps every request with: the level's time, in
/// milliseconds since the level started.
pub const NOW_HEADER: &str = "twice-now-ms";

/// The header the runtime protocol's proxy stamps an announced attempt with: the call it
/// belongs to (`run:call`), which tells a runtime's retry of one call from a new call when
/// billing records a delete. Read only behind the proxy ([`Clock::Header`]).
pub const CALL_KEY_HEADER: &str = "twice-call-key";

/// Where billing reads the time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Clock {
    /// The machine's clock (`twice-sim billing`).
    Wall,
    /// Each request's [`NOW_HEADER`]: only a billing the runtime protocol starts for itself,
    /// behind its proxy, reads it (no flag of `twice-sim billing` turns it on, so nobody
    /// can move a standalone billing's clock from outside).
    Header,
}

impl Clock {
    /// The call a request belongs to, where the proxy in front says so; `None` on the
    /// machine's clock (a standalone billing trusts no such word from outside).
    pub(super) fn call_key(self, headers: &HeaderMap) -> Option<String> {
        if self == Clock::Wall {
            return None;
        }
        let value = headers.get(CALL_KEY_HEADER)?.to_str().ok()?.trim();
        (!value.is_empty()).then(|| value.to_owned())
    }

    /// The time a request gives, on a clock that reads it (`None`: read the machine's clock
    /// when the request is applied); a request without a readable stamp is refused (400).
    pub(super) fn given(self, headers: &HeaderMap) -> Result<Option<u64>, Box<Response>> {
        if self == Clock::Wall {
            return Ok(None);
        }
        let stamp = headers
            .get(NOW_HEADER)
            .and_then(|value| value.to_str().ok())
            .and_then(|text| text.trim().parse::<u64>().ok());
        match stamp {
            Some(now_ms) => Ok(Some(now_ms)),
            None => Err(Box::new(refusal(
                StatusCode::BAD_REQUEST,
                format!("this billing reads the level's time from `{NOW_HEADER}` (milliseconds): the request has none"),
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_billing_behind_the_proxy_takes_the_call_a_request_names() {
        let mut headers = HeaderMap::new();
        headers.insert(CALL_KEY_HEADER, "r1:c2".parse().expect("a header value"));
        assert_eq!(Clock::Header.call_key(&headers), Some("r1:c2".to_owned()));
        assert_eq!(
            Clock::Wall.call_key(&headers),
            None,
            "a standalone billing trusts no word from outside about which call a request is"
        );
        assert_eq!(Clock::Header.call_key(&HeaderMap::new()), None);
    }
}
