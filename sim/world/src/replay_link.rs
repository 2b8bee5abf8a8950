//! A run in a link: the level, the seed, the guards and the moves, small enough to paste.
//!
//! A debrief in the browser offers "send this heist to a friend": a URL whose fragment is
//! `replay=1.<level>.<seed>.<guards>.<moves>`. The browser edition opens it at the run's
//! end through [`ReplayLink`] here, in `twice-world`, so the game can read the same text
//! (it has no flag for it yet) and a link means the same run everywhere. It is a tape without its expectation:
//! the verdict is worked out again by whoever opens it.
//!
//! - `level`: the level's id (`naive-retry`) or file stem; never a path.
//! - `seed`: decimal.
//! - `guards`: `-` for the level's own guards, else the guards left on as `--guards` takes
//!   them (`ledger,key_per_call`, `all`, `none`).
//! - `moves`: the moves as RON (`[(at_phase:4,play:LoseResponse(key:"r1:c1"))]`), in
//!   base64url without padding, so no character needs escaping in a URL.

use serde::{Deserialize, Serialize};

use crate::level::TimedAction;
use crate::runtime::guards::{Guard, Guards};

/// The format's version, the link's first field.
pub const REPLAY_LINK_VERSION: u32 = 1;
/// What a link's fragment starts with.
pub const REPLAY_LINK_PREFIX: &str = "replay=";
/// The longest link read (a browser keeps far longer URLs; a run has at most a few dozen moves).
pub const REPLAY_LINK_CHARS_MAX: usize = 8_000;
/// The most moves a link may hold.
pub const REPLAY_LINK_MOVES_MAX: usize = 200;

/// A run to replay.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplayLink {
    /// The level's id or file stem.
    pub level: String,
    pub seed: u64,
    /// Chosen guards; `None`: the level's own.
    pub guards: Option<Guards>,
    pub moves: Vec<TimedAction>,
}

/// Why a text is not a replay link; each says which part is wrong.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReplayLinkError {
    #[error("a replay link is at most {REPLAY_LINK_CHARS_MAX} characters; this one has {0}")]
    TooLong(usize),
    #[error(
        "not a replay link: expected `replay=1.<level>.<seed>.<guards>.<moves>` (after `#` in the URL a debrief gives)"
    )]
    Shape,
    #[error("replay link version `{0}`: this build reads version {REPLAY_LINK_VERSION}")]
    Version(String),
    #[error("the replay link's level `{0}` is not a level name (letters, digits and -)")]
    Level(String),
    #[error("the replay link's seed `{0}` is not a whole number")]
    Seed(String),
    #[error("the replay link's guards: {0}")]
    Guards(crate::runtime::guards::UnknownGuard),
    #[error("the replay link's moves do not read (was it cut short when copied?): {0}")]
    Moves(String),
    #[error("the replay link holds {0} moves; at most {REPLAY_LINK_MOVES_MAX}")]
    TooManyMoves(usize),
}

fn ron_options() -> ron::Options {
    ron::Options::default().with_default_extension(ron::extensions::Extensions::IMPLICIT_SOME)
}

impl ReplayLink {
    /// The link's fragment, `replay=1.…` (put after `#` in the room's URL).
    pub fn to_fragment(&self) -> String {
        let guards = match self.guards {
            None => "-".to_owned(),
            Some(guards) => guards_text(guards),
        };
        let moves = ron_options().to_string(&self.moves).expect("moves serialize as RON");
        format!(
            "{REPLAY_LINK_PREFIX}{REPLAY_LINK_VERSION}.{}.{}.{guards}.{}",
            self.level,
            self.seed,
            base64url(moves.as_bytes())
        )
    }

    /// Reads a link: a whole URL (the part after `#`), `replay=1.…`, or `1.…`.
    pub fn parse(text: &str) -> Result<ReplayLink, ReplayLinkError> {
        let text = text.trim();
        let chars = text.chars().count();
        if chars > REPLAY_LINK_CHARS_MAX {
            return Err(ReplayLinkError::TooLong(chars));
        }
        let text = text.rsplit_once('#').map_or(text, |(_, fragment)| fragment);
        let text = text.strip_prefix(REPLAY_LINK_PREFIX).unwrap_or(text);
        let parts: Vec<&str> = text.split('.').collect();
        let [version, level, seed, guards, moves] = parts[..] else {
            return Err(ReplayLinkError::Shape);
        };
        if version != REPLAY_LINK_VERSION.to_string() {
            return Err(ReplayLinkError::Version(shorten(version)));
        }
        if level.is_empty()
            || !level
                .chars()
                .all(|character| character.is_ascii_alphanumeric() || character == '-')
        {
            return Err(ReplayLinkError::Level(shorten(level)));
        }
        let seed = seed.parse::<u64>().map_err(|_| ReplayLinkError::Seed(shorten(seed)))?;
        let guards = match guards {
            "-" => None,
            list => Some(Guards::parse_list(list).map_err(ReplayLinkError::Guards)?),
        };
        let bytes = from_base64url(moves).ok_or_else(|| ReplayLinkError::Moves("not base64url".into()))?;
        let ron_text = String::from_utf8(bytes).map_err(|_| ReplayLinkError::Moves("not UTF-8".into()))?;
        let moves: Vec<TimedAction> = ron_options()
            .from_str(&ron_text)
            .map_err(|error| ReplayLinkError::Moves(error.to_string()))?;
        if moves.len() > REPLAY_LINK_MOVES_MAX {
            return Err(ReplayLinkError::TooManyMoves(moves.len()));
        }
        if moves.windows(2).any(|pair| pair[1].at_phase < pair[0].at_phase) {
            return Err(ReplayLinkError::Moves("the moves are not in phase order".into()));
        }
        Ok(ReplayLink {
            level: level.to_owned(),
            seed,
            guards,
            moves,
        })
    }
}

/// The guards left on, as `--guards` takes them.
fn guards_text(guards: Guards) -> String {
    let on: Vec<&str> = Guard::ALL
        .into_iter()
        .filter(|guard| guards.is_on(*guard))
        .map(Guard::name)
        .collect();
    match on.len() {
        0 => "none".into(),
        count if count == Guard::ALL.len() => "all".into(),
        _ => on.join(","),
    }
}

fn shorten(text: &str) -> String {
    const SHOWN: usize = 40;
    if text.chars().count() <= SHOWN {
        text.to_owned()
    } else {
        format!("{}…", text.chars().take(SHOWN).collect::<String>())
    }
}

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// Base64url without padding (RFC 4648 §5).
fn base64url(bytes: &[u8]) -> String {
    let mut text = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let value = chunk.iter().enumerate().fold(0_u32, |value, (index, byte)| {
            value | u32::from(*byte) << (16 - 8 * index)
        });
        for index in 0..=chunk.len() {
            text.push(ALPHABET[(value >> (18 - 6 * index) & 0x3f) as usize] as char);
        }
    }
    text
}

fn from_base64url(text: &str) -> Option<Vec<u8>> {
    if text.len() % 4 == 1 {
        return None;
    }
    let mut bytes = Vec::with_capacity(text.len() * 3 / 4);
    for chunk in text.as_bytes().chunks(4) {
        let mut value = 0_u32;
        for (index, character) in chunk.iter().enumerate() {
            let digit = ALPHABET.iter().position(|candidate| candidate == character)?;
            value |= (digit as u32) << (18 - 6 * index);
        }
        for index in 0..chunk.len() - 1 {
            bytes.push((value >> (16 - 8 * index)) as u8);
        }
    }
    Some(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cards::{CrashWorker, LoseResponse};
    use crate::level::Play;

    fn link() -> ReplayLink {
        ReplayLink {
            level: "01-naive-retry".into(),
            seed: 7,
            guards: None,
            moves: vec![
                TimedAction {
                    at_phase: 4,
                    play: Play::LoseResponse(LoseResponse {
                        key: Some("r1:c1".into()),
                    }),
                    fizzles: false,
                },
                TimedAction {
                    at_phase: 9,
                    play: Play::CrashWorker(CrashWorker {
                        worker: Some(1),
                        in_phase: None,
                    }),
                    fizzles: false,
                },
            ],
        }
    }

    #[test]
    fn a_link_round_trips_from_a_url_a_fragment_or_its_fields() {
        let fragment = link().to_fragment();
        assert!(fragment.starts_with("replay=1.01-naive-retry.7.-."), "{fragment}");
        assert!(
            fragment
                .chars()
                .all(|character| character.is_ascii_alphanumeric() || "=.-_".contains(character)),
            "{fragment}"
        );
        for text in [
            fragment.clone(),
            format!("http://127.0.0.1:7880/#{fragment}"),
            fragment.trim_start_matches(REPLAY_LINK_PREFIX).to_owned(),
        ] {
            assert_eq!(ReplayLink::parse(&text).unwrap(), link());
        }
        let sandbox = ReplayLink {
            guards: Some(Guards::parse_list("ledger,key_per_call").unwrap()),
            ..link()
        };
        assert_eq!(ReplayLink::parse(&sandbox.to_fragment()).unwrap(), sandbox);
    }

    #[test]
    fn every_broken_part_is_named() {
        let good = link().to_fragment();
        let cut = &good[..good.len() - 3];
        let cases = [
            ("replay=2.a.1.-.W10", "version"),
            ("replay=1.a/b.1.-.W10", "level"),
            ("replay=1.a.x.-.W10", "seed"),
            ("replay=1.a.1.nope.W10", "guards"),
            ("replay=1.a.1.-.!!!!", "moves"),
            (cut, "moves"),
            ("hello", "not a replay link"),
        ];
        for (text, named) in cases {
            let error = ReplayLink::parse(text).unwrap_err().to_string();
            assert!(error.contains(named), "{text}: {error}");
        }
        assert_eq!(ReplayLink::parse("replay=1.a.1.-.W10").unwrap().moves, Vec::new());
        assert!(matches!(
            ReplayLink::parse(&"x".repeat(REPLAY_LINK_CHARS_MAX + 1)),
            Err(ReplayLinkError::TooLong(_))
        ));
    }

    #[test]
    fn base64url_round_trips_every_length() {
        for length in 0..40_u8 {
            let bytes: Vec<u8> = (0..length).map(|index| index.wrapping_mul(37)).collect();
            assert_eq!(from_base64url(&base64url(&bytes)).unwrap(), bytes);
        }
    }
}
