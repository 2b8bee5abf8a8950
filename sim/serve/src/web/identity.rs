//! Who a browser is: a random session id in a cookie, and a display name.

use super::error::WebError;

/// The cookie that carries the session id.
pub const COOKIE_NAME: &str = "twice_session";
/// Random bytes in a session id (128 bits: not guessable, not enumerable).
pub const SESSION_ID_BYTES: usize = 16;
/// The longest display name.
pub const NAME_CHARS_MAX: usize = 32;

/// A session's id: random, shown only as hex in the cookie.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct SessionId([u8; SESSION_ID_BYTES]);

impl std::fmt::Debug for SessionId {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // An id is a credential: logs show that there is one, not what it is.
        formatter.write_str("SessionId(…)")
    }
}

impl SessionId {
    pub(super) fn generate() -> Result<SessionId, WebError> {
        let mut bytes = [0_u8; SESSION_ID_BYTES];
        getrandom::fill(&mut bytes).map_err(|error| WebError::logged("no random bytes for a session id", error))?;
        Ok(SessionId(bytes))
    }

    /// What the room file keeps instead of the id: a cookie is a credential.
    pub fn sha256(self) -> String {
        crate::tokens::hash_token(&self.to_hex())
    }

    pub fn to_hex(self) -> String {
        self.0.iter().map(|byte| format!("{byte:02x}")).collect()
    }

    /// Exactly [`SESSION_ID_BYTES`] bytes as lowercase hex, or nothing.
    pub fn parse(text: &str) -> Option<SessionId> {
        if text.len() != SESSION_ID_BYTES * 2 || !text.bytes().all(|byte| matches!(byte, b'0'..=b'9' | b'a'..=b'f')) {
            return None;
        }
        let mut bytes = [0_u8; SESSION_ID_BYTES];
        for (index, byte) in bytes.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&text[index * 2..index * 2 + 2], 16).ok()?;
        }
        Some(SessionId(bytes))
    }

    /// The session id in a `Cookie` header's value (`a=1; twice_session=…; b=2`), if any.
    pub fn from_cookie_header(header: &str) -> Option<SessionId> {
        header
            .split(';')
            .filter_map(|pair| pair.trim().split_once('='))
            .find(|(name, _)| *name == COOKIE_NAME)
            .and_then(|(_, value)| SessionId::parse(value.trim()))
    }
}

/// A participant's display name: trimmed, 1 to [`NAME_CHARS_MAX`] letters, digits, spaces
/// and `-_.'`. It is their operator id in the room's race, and the presenter shows it.
pub fn check_name(name: &str) -> Result<String, WebError> {
    let name = name.trim();
    let chars = name.chars().count();
    if chars == 0 {
        return Err(WebError::invalid(
            "name: choose a name the room will see (1 to 32 characters)",
        ));
    }
    if chars > NAME_CHARS_MAX {
        return Err(WebError::invalid(format!(
            "name: {chars} characters, more than the {NAME_CHARS_MAX} allowed"
        )));
    }
    if let Some(bad) = name
        .chars()
        .find(|character| !(character.is_alphanumeric() || matches!(character, ' ' | '-' | '_' | '.' | '\'')))
    {
        return Err(WebError::invalid(format!(
            "name: letters, digits, spaces and - _ . ' only; not {bad:?}"
        )));
    }
    Ok(name.split_whitespace().collect::<Vec<_>>().join(" "))
}
