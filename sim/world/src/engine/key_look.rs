//! How an idempotency key looks on screen: a colour and a glyph, so keys are told apart with
//! or without colour. Worked out once here; the game (egui colours) and the browser (CSS
//! colours) only draw what this says, so one key looks the same in both.
//!
//! Keys are numbered in the order the timeline first shows them; a key the timeline never
//! showed (such as the benchmark's rows) gets a stable look from its hash.

use std::collections::BTreeMap;

use crate::runtime::key::fnv1a64;
use crate::simulator::TimelineEntry;

/// Key colours (red, green, blue), handed out in order of first appearance. The first ones
/// stay clear of the crew's gold and the runtime's teal.
pub const KEY_COLOURS: [[u8; 3]; 8] = [
    [255, 110, 200],
    [150, 230, 90],
    [120, 150, 255],
    [255, 150, 90],
    [200, 150, 255],
    [255, 235, 100],
    [90, 230, 200],
    [255, 120, 120],
];
/// Key glyphs: all in egui's default fonts (with Hack added for ▲ ◆ ▼) and in DejaVu Sans.
pub const KEY_GLYPHS: [char; 8] = ['●', '■', '▲', '◆', '★', '▼', '⬟', '◉'];
/// Distinct (colour, glyph) pairs before they repeat.
pub const KEY_LOOKS: usize = KEY_COLOURS.len() * KEY_GLYPHS.len();

/// One key's look.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KeyLook {
    /// Red, green, blue.
    pub rgb: [u8; 3],
    pub glyph: char,
}

impl KeyLook {
    /// The look of the key numbered `index` (by first appearance): distinct for the first
    /// [`KEY_LOOKS`] keys.
    pub fn at(index: usize) -> KeyLook {
        // Colour `i` goes with glyph `i`, then glyph `i + 1`, …: neighbours differ in both.
        let index = index % KEY_LOOKS;
        KeyLook {
            rgb: KEY_COLOURS[index % KEY_COLOURS.len()],
            glyph: KEY_GLYPHS[(index + index / KEY_COLOURS.len()) % KEY_GLYPHS.len()],
        }
    }

    /// The look of a key that was never numbered: stable, from the key's hash.
    pub fn of_unnumbered(key: &str) -> KeyLook {
        KeyLook::at(unnumbered_index(key))
    }

    /// The colour as CSS writes it: `#ff6ec8`.
    pub fn hex(self) -> String {
        let [red, green, blue] = self.rgb;
        format!("#{red:02x}{green:02x}{blue:02x}")
    }
}

/// The number a key the timeline never showed is drawn with.
fn unnumbered_index(key: &str) -> usize {
    // The remainder is below KEY_LOOKS (64), so it fits any usize.
    (fnv1a64(&[key.as_bytes()]) % KEY_LOOKS as u64) as usize
}

/// Keys numbered by first appearance in a timeline.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KeyLooks {
    index: BTreeMap<String, usize>,
}

impl KeyLooks {
    pub fn from_timeline(entries: &[TimelineEntry]) -> KeyLooks {
        let mut looks = KeyLooks::default();
        for entry in entries {
            looks.note(entry);
        }
        looks
    }

    /// Numbers the entry's key if it is new (for a view that reads the timeline as it grows).
    pub fn note(&mut self, entry: &TimelineEntry) {
        if let Some(key) = &entry.key {
            let next = self.index.len();
            self.index.entry(key.clone()).or_insert(next);
        }
    }

    /// The key's number: by first appearance, or from its hash if the timeline never showed it.
    pub fn index_of(&self, key: &str) -> usize {
        self.index.get(key).copied().unwrap_or_else(|| unnumbered_index(key))
    }

    pub fn look(&self, key: &str) -> KeyLook {
        KeyLook::at(self.index_of(key))
    }

    /// Every numbered key, in the order it first appeared.
    pub fn in_order(&self) -> Vec<(&str, KeyLook)> {
        let mut keys: Vec<(&str, usize)> = self.index.iter().map(|(key, index)| (key.as_str(), *index)).collect();
        keys.sort_by_key(|(_, index)| *index);
        keys.into_iter().map(|(key, index)| (key, KeyLook::at(index))).collect()
    }

    pub fn len(&self) -> usize {
        self.index.len()
    }

    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_keys_differ_in_colour_and_in_glyph() {
        let looks: Vec<KeyLook> = (0..KEY_COLOURS.len()).map(KeyLook::at).collect();
        for (index, look) in looks.iter().enumerate() {
            for other in &looks[index + 1..] {
                assert_ne!(look.rgb, other.rgb);
                assert_ne!(look.glyph, other.glyph);
            }
        }
        // All 64 pairs are distinct, then they repeat.
        let pairs: std::collections::BTreeSet<KeyLook> = (0..KEY_LOOKS).map(KeyLook::at).collect();
        assert_eq!(pairs.len(), KEY_LOOKS);
        assert_eq!(KeyLook::at(KEY_LOOKS), KeyLook::at(0));
    }

    #[test]
    fn the_colour_is_written_as_css_writes_it() {
        assert_eq!(KeyLook::at(0).hex(), "#ff6ec8");
        assert_eq!(KeyLook::at(7).hex(), "#ff7878");
    }

    #[test]
    fn keys_are_numbered_by_first_appearance_and_unseen_keys_by_hash() {
        let entry = |key: Option<&str>| TimelineEntry {
            phase: 0,
            time_ms: 0,
            actor: crate::simulator::Actor::Crew,
            kind: "test".to_owned(),
            run: None,
            key: key.map(str::to_owned),
            text: String::new(),
            guard: None,
        };
        let looks = KeyLooks::from_timeline(&[entry(Some("b")), entry(None), entry(Some("a")), entry(Some("b"))]);
        assert_eq!(looks.index_of("b"), 0);
        assert_eq!(looks.index_of("a"), 1);
        assert_eq!(looks.in_order(), vec![("b", KeyLook::at(0)), ("a", KeyLook::at(1))]);
        assert_eq!(looks.look("never shown"), KeyLook::of_unnumbered("never shown"));
        assert!(looks.index_of("never shown") < KEY_LOOKS);
    }
}
