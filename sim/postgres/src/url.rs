//! The ledger's PostgreSQL address: `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?schema=NAME]`.
//!
//! One type, parsed once at the command line, so every command reads the same form and
//! every message shows the same redacted text: the password never leaves this type except
//! to the client that connects with it ([`PostgresUrl::password`]). `Display` and `Debug`
//! both print `postgres://twice:***@host:5432/db`.
//!
//! `schema` picks the PostgreSQL schema the ledger's tables live in (default `public`), so
//! one database can hold several ledgers side by side (a drill makes a fresh one per drill,
//! the tests one per test). With no password in the URL, `PGPASSWORD` is used if it is set,
//! as `libpq` does: a parent can hand a child the password without putting it on the
//! child's command line, where `ps` would show it.

use std::fmt;

/// The port PostgreSQL listens on unless told otherwise.
pub const DEFAULT_PORT: u16 = 5432;
/// The schema a URL without `?schema=` names.
pub const DEFAULT_SCHEMA: &str = "public";
/// PostgreSQL's longest identifier (`NAMEDATALEN - 1`).
pub const SCHEMA_CHARS_MAX: usize = 63;
/// The longest URL accepted: far beyond any real one, short of a pasted file.
pub const URL_CHARS_MAX: usize = 2_048;
/// The environment variable read for the password when the URL has none (libpq's name).
pub const PASSWORD_VARIABLE: &str = "PGPASSWORD";

/// Why a `postgres://` URL was refused. Never carries the password.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    #[error("a PostgreSQL URL starts with postgres:// or postgresql://")]
    Scheme,
    #[error("the URL is longer than {URL_CHARS_MAX} characters")]
    TooLong,
    #[error("the URL names no user: give postgres://USER@HOST/DATABASE")]
    NoUser,
    #[error("the URL names no host: give postgres://USER@HOST/DATABASE")]
    NoHost,
    #[error("the URL names no database: give postgres://USER@HOST/DATABASE")]
    NoDatabase,
    #[error("port `{0}` is not a number from 1 to 65535")]
    BadPort(String),
    #[error("`{0}` is not valid percent-encoding")]
    BadEscape(String),
    #[error(
        "schema `{0}` is not a plain name: 1 to {SCHEMA_CHARS_MAX} lowercase letters, digits and `_`, not starting with a digit"
    )]
    BadSchema(String),
    #[error("parameter `{0}` is not one this build reads: `schema=NAME` and `sslmode=disable`")]
    UnknownParameter(String),
    #[error(
        "sslmode={0}: this build connects without TLS (sslmode=disable); reach a server on another machine over a private network or a tunnel"
    )]
    Tls(String),
    #[error("a host given as a socket folder (`{0}`) is not supported: give a TCP host name or address")]
    SocketFolder(String),
}

/// A parsed `postgres://` URL. The password is kept, but never shown.
#[derive(Clone, PartialEq, Eq)]
pub struct PostgresUrl {
    user: String,
    password: Option<String>,
    host: String,
    port: u16,
    database: String,
    schema: String,
}

impl PostgresUrl {
    /// Whether `text` is meant as a PostgreSQL URL (whatever else is wrong with it).
    pub fn looks_like(text: &str) -> bool {
        let lower = text.trim_start().to_ascii_lowercase();
        lower.starts_with("postgres://") || lower.starts_with("postgresql://")
    }

    pub fn parse(text: &str) -> Result<PostgresUrl, UrlError> {
        if text.chars().count() > URL_CHARS_MAX {
            return Err(UrlError::TooLong);
        }
        let text = text.trim();
        let lower = text.to_ascii_lowercase();
        let rest = ["postgres://", "postgresql://"]
            .into_iter()
            .find(|scheme| lower.starts_with(scheme))
            .map(|scheme| &text[scheme.len()..])
            .ok_or(UrlError::Scheme)?;
        let (before_query, query) = match rest.split_once('?') {
            Some((before, query)) => (before, Some(query)),
            None => (rest, None),
        };
        let (authority, path) = match before_query.split_once('/') {
            Some((authority, path)) => (authority, path),
            None => (before_query, ""),
        };
        // The last `@` ends the user part: a password may hold an unescaped `@`.
        let (credentials, address) = authority.rsplit_once('@').ok_or(UrlError::NoUser)?;
        let (user, password) = match credentials.split_once(':') {
            Some((user, password)) => (decode(user)?, Some(decode(password)?)),
            None => (decode(credentials)?, None),
        };
        if user.is_empty() {
            return Err(UrlError::NoUser);
        }
        let (host, port) = split_host_port(address)?;
        let host = decode(&host)?;
        if host.starts_with('/') {
            return Err(UrlError::SocketFolder(host));
        }
        let database = decode(path)?;
        if database.is_empty() {
            return Err(UrlError::NoDatabase);
        }
        let mut schema = DEFAULT_SCHEMA.to_owned();
        for pair in query
            .into_iter()
            .flat_map(|query| query.split('&'))
            .filter(|pair| !pair.is_empty())
        {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            let value = decode(value)?;
            match name {
                "schema" => schema = checked_schema(&value)?,
                "sslmode" if value == "disable" => {}
                "sslmode" => return Err(UrlError::Tls(value)),
                other => return Err(UrlError::UnknownParameter(decode(other)?)),
            }
        }
        Ok(PostgresUrl {
            user,
            password: password.filter(|password| !password.is_empty()),
            host,
            port,
            database,
            schema,
        })
    }

    pub fn user(&self) -> &str {
        &self.user
    }

    pub fn host(&self) -> &str {
        &self.host
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn database(&self) -> &str {
        &self.database
    }

    /// The PostgreSQL schema the ledger's tables live in.
    pub fn schema(&self) -> &str {
        &self.schema
    }

    /// The password the URL carries, for the client that connects and for a parent handing
    /// it to a child through [`PASSWORD_VARIABLE`]. Never print it.
    pub fn password(&self) -> Option<&str> {
        self.password.as_deref()
    }

    /// The same server and credentials, another schema.
    pub fn with_schema(&self, schema: &str) -> Result<PostgresUrl, UrlError> {
        Ok(PostgresUrl {
            schema: checked_schema(schema)?,
            ..self.clone()
        })
    }

    /// The same database reached at another address (a relay in front of the server).
    pub fn with_address(&self, host: &str, port: u16) -> PostgresUrl {
        PostgresUrl {
            host: host.to_owned(),
            port,
            ..self.clone()
        }
    }

    /// The same database on the same server, another database name (the tests make one each).
    pub fn with_database(&self, database: &str) -> PostgresUrl {
        PostgresUrl {
            database: database.to_owned(),
            ..self.clone()
        }
    }

    /// The URL as text without its password: safe for a command line or a message, and
    /// parsed back to the same URL less the password.
    pub fn without_password(&self) -> String {
        self.text(None)
    }

    /// The URL as text with `***` for its password (or without one): what every message shows.
    pub fn redacted(&self) -> String {
        self.text(self.password.as_ref().map(|_| "***"))
    }

    fn text(&self, password: Option<&str>) -> String {
        let mut text = format!("postgres://{}", encode(&self.user));
        if let Some(password) = password {
            text.push(':');
            text.push_str(password);
        }
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            encode(&self.host)
        };
        text.push_str(&format!("@{host}:{}/{}", self.port, encode(&self.database)));
        if self.schema != DEFAULT_SCHEMA {
            text.push_str(&format!("?schema={}", self.schema));
        }
        text
    }
}

impl fmt::Display for PostgresUrl {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.redacted())
    }
}

impl fmt::Debug for PostgresUrl {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "PostgresUrl({})", self.redacted())
    }
}

fn checked_schema(schema: &str) -> Result<String, UrlError> {
    let plain = !schema.is_empty()
        && schema.len() <= SCHEMA_CHARS_MAX
        && schema
            .chars()
            .all(|character| character.is_ascii_lowercase() || character.is_ascii_digit() || character == '_')
        && !schema.starts_with(|character: char| character.is_ascii_digit());
    if plain {
        Ok(schema.to_owned())
    } else {
        Err(UrlError::BadSchema(schema.chars().take(SCHEMA_CHARS_MAX + 1).collect()))
    }
}

/// `host`, `host:port`, `[v6]` or `[v6]:port`.
fn split_host_port(address: &str) -> Result<(String, u16), UrlError> {
    let (host, port) = if let Some(rest) = address.strip_prefix('[') {
        let (host, after) = rest.split_once(']').ok_or(UrlError::NoHost)?;
        match after.strip_prefix(':') {
            Some(port) => (host, Some(port)),
            None if after.is_empty() => (host, None),
            None => return Err(UrlError::BadPort(after.to_owned())),
        }
    } else {
        match address.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (address, None),
        }
    };
    if host.is_empty() {
        return Err(UrlError::NoHost);
    }
    let port = match port {
        None | Some("") => DEFAULT_PORT,
        Some(text) => text
            .parse::<u16>()
            .ok()
            .filter(|port| *port > 0)
            .ok_or_else(|| UrlError::BadPort(text.chars().take(16).collect()))?,
    };
    Ok((host.to_owned(), port))
}

/// Percent-decoding of one part.
fn decode(part: &str) -> Result<String, UrlError> {
    let bytes = part.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%' {
            let hex = bytes
                .get(index + 1..index + 3)
                .and_then(|pair| std::str::from_utf8(pair).ok())
                .and_then(|pair| u8::from_str_radix(pair, 16).ok());
            // The part may be the password: the error names the escape, not the part.
            let byte = hex.ok_or_else(|| UrlError::BadEscape(part.get(index..index + 3).unwrap_or("%").to_owned()))?;
            decoded.push(byte);
            index += 3;
        } else {
            decoded.push(bytes[index]);
            index += 1;
        }
    }
    String::from_utf8(decoded).map_err(|_| UrlError::BadEscape("(not UTF-8 once decoded)".into()))
}

/// Percent-encoding of everything but unreserved characters.
fn encode(part: &str) -> String {
    let mut encoded = String::with_capacity(part.len());
    for byte in part.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            encoded.push(char::from(byte));
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    encoded
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_url_is_read_and_shown_without_its_password() {
        let url = PostgresUrl::parse("postgres://twice:s%40cret@db.example:6543/ledger?schema=drill_7").unwrap();
        assert_eq!(url.user(), "twice");
        assert_eq!(url.password(), Some("s@cret"));
        assert_eq!(url.host(), "db.example");
        assert_eq!(url.port(), 6543);
        assert_eq!(url.database(), "ledger");
        assert_eq!(url.schema(), "drill_7");
        assert_eq!(
            url.to_string(),
            "postgres://twice:***@db.example:6543/ledger?schema=drill_7"
        );
        assert_eq!(
            format!("{url:?}"),
            "PostgresUrl(postgres://twice:***@db.example:6543/ledger?schema=drill_7)"
        );
        assert!(!format!("{url} {url:?}").contains("cret"));
        let again = PostgresUrl::parse(&url.without_password()).unwrap();
        assert_eq!(again.password(), None);
        assert_eq!(again.with_schema("drill_7").unwrap().schema(), "drill_7");
    }

    #[test]
    fn defaults_and_other_forms() {
        let url = PostgresUrl::parse("postgresql://twice@127.0.0.1/postgres").unwrap();
        assert_eq!(
            (url.port(), url.schema(), url.password()),
            (DEFAULT_PORT, "public", None)
        );
        assert_eq!(url.to_string(), "postgres://twice@127.0.0.1:5432/postgres");
        let v6 = PostgresUrl::parse("postgres://twice:pw@[::1]:55432/db?sslmode=disable").unwrap();
        assert_eq!((v6.host(), v6.port()), ("::1", 55432));
        assert_eq!(v6.to_string(), "postgres://twice:***@[::1]:55432/db");
        // A password with an unescaped `@` still parses: the last `@` ends the credentials.
        let at = PostgresUrl::parse("postgres://twice:a@b@host/db").unwrap();
        assert_eq!((at.password(), at.host()), (Some("a@b"), "host"));
    }

    #[test]
    fn every_bad_url_is_refused_with_the_problem_named_and_no_password() {
        let cases = [
            ("http://twice@host/db", UrlError::Scheme),
            ("postgres://host/db", UrlError::NoUser),
            ("postgres://twice:hunter2@/db", UrlError::NoHost),
            ("postgres://twice:hunter2@host", UrlError::NoDatabase),
            (
                "postgres://twice:hunter2@host:99999/db",
                UrlError::BadPort("99999".into()),
            ),
            ("postgres://twice:hunter2@host:0/db", UrlError::BadPort("0".into())),
            (
                "postgres://twice:hunter2@host/db?schema=Drill",
                UrlError::BadSchema("Drill".into()),
            ),
            (
                "postgres://twice:hunter2@host/db?schema=1x",
                UrlError::BadSchema("1x".into()),
            ),
            (
                "postgres://twice:hunter2@host/db?schema=a;drop",
                UrlError::BadSchema("a;drop".into()),
            ),
            (
                "postgres://twice:hunter2@host/db?pool=4",
                UrlError::UnknownParameter("pool".into()),
            ),
            (
                "postgres://twice:hunter2@host/db?sslmode=require",
                UrlError::Tls("require".into()),
            ),
            (
                "postgres://twice:hunter2@%2Ftmp/db",
                UrlError::SocketFolder("/tmp".into()),
            ),
            ("postgres://twice:hun%zzter2@host/db", UrlError::BadEscape("%zz".into())),
        ];
        for (text, expected) in cases {
            let error = PostgresUrl::parse(text).unwrap_err();
            assert_eq!(error, expected, "{text}");
            assert!(!error.to_string().contains("hunter2"), "{text}: {error}");
        }
        assert_eq!(
            PostgresUrl::parse(&format!("postgres://twice@host/{}", "d".repeat(URL_CHARS_MAX))),
            Err(UrlError::TooLong)
        );
        assert!(PostgresUrl::looks_like("POSTGRES://x"));
        assert!(!PostgresUrl::looks_like("/tmp/ledger.sqlite"));
    }
}
