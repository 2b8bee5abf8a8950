//! The registry's machinery: from the list of cards in `cards/mod.rs`, the kinds a level deals
//! ([`CardKind`](super::CardKind)), the moves a tape stores ([`Play`](super::Play)) spelled as
//! they always were, and every question about a card answered by asking its module.

/// Makes the card enums and their dispatch from the list of card structs (each `Card`).
macro_rules! registry {
    ($($card:ident),+ $(,)?) => {
        /// A fault card (or operator move, or declaration) a level may put in the player's hand.
        /// Its order is the order hands are listed in.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
        pub enum CardKind {
            $($card),+
        }

        /// The cards' names, as tapes and levels spell them.
        const NAMES: &[&str] = &[$(stringify!($card)),+];

        impl CardKind {
            /// Every kind of card, in the registry's order.
            pub const ALL: &'static [CardKind] = &[$(CardKind::$card),+];

            /// Its name as tapes and levels spell it: `LoseResponse`.
            pub fn name(self) -> &'static str {
                NAMES[self as usize]
            }
            /// Its title as players read it: "Lose the response".
            pub fn title(self) -> &'static str {
                match self { $(CardKind::$card => <$card as Card>::TITLE),+ }
            }
            /// What it is aimed at, and so where the player makes it.
            pub fn aims(self) -> Aims {
                match self { $(CardKind::$card => <$card as Card>::AIMS),+ }
            }
            /// Whether it can make one intended credit land twice ([`Card::CAN_PAY_TWICE`]).
            pub fn can_pay_twice(self) -> bool {
                match self { $(CardKind::$card => <$card as Card>::CAN_PAY_TWICE),+ }
            }
            /// Whether playing it may bring one more worker into the level.
            pub fn may_start_a_worker(self) -> bool {
                match self { $(CardKind::$card => <$card as Card>::MAY_START_A_WORKER),+ }
            }
            /// The explorer deals it only before Penny's first call.
            pub fn dealt_before_first_call(self) -> bool {
                match self { $(CardKind::$card => <$card as Card>::DEALT_BEFORE_FIRST_CALL),+ }
            }
            /// What it would do if played now, in the player's words.
            pub fn effect(self, simulation: &Simulation) -> String {
                match self { $(CardKind::$card => <$card as Card>::effect(simulation)),+ }
            }
            /// The moves the hand offers for it now.
            pub fn targets(self, simulation: &Simulation) -> Vec<Target> {
                match self { $(CardKind::$card => <$card as Card>::targets(simulation)),+ }
            }
            /// Why the hand offers no move for it now, in this run's terms.
            pub fn no_target(self, simulation: &Simulation) -> String {
                match self { $(CardKind::$card => <$card as Card>::no_target(simulation)),+ }
            }
            /// Holding it, a quiet level could still change.
            pub fn matters_when_quiet(self, simulation: &Simulation) -> Result<bool, LedgerError> {
                match self { $(CardKind::$card => <$card as Card>::matters_when_quiet(simulation)),+ }
            }
            /// Every move it offers now, made as `operator` (what the sweep tries).
            pub fn candidates(self, simulation: &Simulation, operator: &str) -> Result<Vec<Play>, SimError> {
                match self { $(CardKind::$card => <$card as Card>::candidates(simulation, operator)),+ }
            }
            /// A move the explorer deals, and the pick that names its key when it is played.
            pub fn deal(self, space: &DealSpace<'_>, rng: &mut ChaCha8Rng) -> (Play, Option<u64>) {
                match self {
                    $(CardKind::$card => {
                        let (card, pick) = <$card as Card>::deal(space, rng);
                        (Play::$card(card), pick)
                    })+
                }
            }
            /// What this kind's armed moves will do, in words a player reads.
            pub fn armed_words(self, armed: &Armed) -> Vec<String> {
                match self {
                    $(CardKind::$card => {
                        let moves: Vec<&$card> =
                            armed.moves().iter().filter_map(|waiting| $card::from_play(&waiting.play)).collect();
                        if moves.is_empty() { Vec::new() } else { <$card as Card>::armed_words(&moves) }
                    })+
                }
            }
        }

        /// A player's move, as the game sends it and a tape stores it (tape format version 2):
        /// one card's struct. The wire cards act on a message on the wire at the moment they are
        /// played; version 1 tapes armed them for the next message instead ([`PlayVersion1`],
        /// replayed by [`WireRule::ArmNextMessage`]).
        #[derive(Clone, Debug, PartialEq, Eq)]
        pub enum Play {
            $($card($card)),+
        }

        $(
            impl From<$card> for Play {
                fn from(card: $card) -> Play {
                    Play::$card(card)
                }
            }

            impl Registered for $card {
                const KIND: CardKind = CardKind::$card;
                fn from_play(play: &Play) -> Option<&$card> {
                    match play {
                        Play::$card(card) => Some(card),
                        #[allow(unreachable_patterns)]
                        _ => None,
                    }
                }
            }
        )+

        impl Play {
            /// Which card it plays.
            pub fn card(&self) -> CardKind {
                match self { $(Play::$card(_) => CardKind::$card),+ }
            }
            /// The card's module, asked about this move.
            fn as_move(&self) -> &dyn Move {
                match self { $(Play::$card(card) => card),+ }
            }
        }

        impl serde::Serialize for Play {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let index = self.card() as u32;
                match self {
                    $(Play::$card(card) => serde_shape::struct_variant(serializer, "Play", index, stringify!($card), card)),+
                }
            }
        }

        impl<'de> serde::Deserialize<'de> for Play {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Play, D::Error> {
                struct Moves;
                impl<'de> serde::de::Visitor<'de> for Moves {
                    type Value = Play;
                    fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
                        formatter.write_str("a card's move")
                    }
                    fn visit_enum<A: serde::de::EnumAccess<'de>>(self, data: A) -> Result<Play, A::Error> {
                        let (index, variant) = serde_shape::variant(data, NAMES)?;
                        match CardKind::ALL[index] {
                            $(CardKind::$card => {
                                <$card as serde::Deserialize>::deserialize(serde_shape::VariantAsStruct(variant)).map(Play::$card)
                            })+
                        }
                    }
                }
                deserializer.deserialize_enum("Play", NAMES, Moves)
            }
        }

        /// A move as tape format version 1 stored it: the wire cards were unit variants that
        /// armed the next message when none was on the wire. Read only; a tape is always written
        /// as version 2.
        #[derive(Clone, Debug, PartialEq, Eq)]
        pub struct PlayVersion1(pub Play);

        impl From<PlayVersion1> for Play {
            fn from(play: PlayVersion1) -> Play {
                play.0
            }
        }

        /// The cards tape format 1 knew.
        fn kinds_in_version_1() -> &'static [CardKind] {
            static KINDS_1: std::sync::LazyLock<Vec<CardKind>> = std::sync::LazyLock::new(|| {
                let mut kinds = Vec::new();
                $(if <$card as Card>::IN_TAPE_VERSION_1 { kinds.push(CardKind::$card); })+
                kinds
            });
            &KINDS_1
        }

        /// Their names, as tape format 1 spelled them.
        fn names_in_version_1() -> &'static [&'static str] {
            static NAMES_1: std::sync::LazyLock<Vec<&'static str>> =
                std::sync::LazyLock::new(|| kinds_in_version_1().iter().map(|kind| kind.name()).collect());
            &NAMES_1
        }

        impl<'de> serde::Deserialize<'de> for PlayVersion1 {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<PlayVersion1, D::Error> {
                struct Moves;
                impl<'de> serde::de::Visitor<'de> for Moves {
                    type Value = PlayVersion1;
                    fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
                        formatter.write_str("a card's move (tape format 1)")
                    }
                    fn visit_enum<A: serde::de::EnumAccess<'de>>(self, data: A) -> Result<PlayVersion1, A::Error> {
                        let (index, variant) = serde_shape::variant(data, names_in_version_1())?;
                        match kinds_in_version_1()[index] {
                            $(CardKind::$card => {
                                <$card as Card>::read_version_1(variant).map(|card| PlayVersion1(Play::$card(card)))
                            })+
                        }
                    }
                }
                deserializer.deserialize_enum("Play", names_in_version_1(), Moves)
            }
        }
    };
}

pub(super) use registry;
