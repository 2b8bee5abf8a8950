//! `KeyHandling` has one name (`metadata-only`, as flags, the billing server's file and its
//! stats spell it) and reads both spellings; the serde name (`metadata_only`) stays the one
//! level files and the browser's views use.

use serde::{Deserialize, Serialize};
use twice_sim::billing::KeyHandling;
use twice_sim::billing::key_handling::by_name;

#[test]
fn every_name_parses_back_and_the_serde_name_is_read_too() {
    for key_handling in KeyHandling::ALL {
        assert_eq!(key_handling.name().parse(), Ok(key_handling));
        assert_eq!(key_handling.to_string(), key_handling.name());
        let serde_name = ron::to_string(&key_handling).unwrap();
        assert_eq!(serde_name.parse(), Ok(key_handling), "{serde_name}");
    }
    assert_eq!(" honor ".parse(), Ok(KeyHandling::Honour));
    assert_eq!(KeyHandling::MetadataOnly.name(), "metadata-only");
}

#[test]
fn an_unknown_name_is_named_with_the_choices() {
    let error = "sometimes".parse::<KeyHandling>().unwrap_err();
    assert_eq!(
        error.to_string(),
        "unknown billing key handling `sometimes`; use honour, metadata-only or ignore"
    );
}

#[test]
fn by_name_writes_the_flag_spelling_and_reads_both() {
    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Stats {
        #[serde(with = "by_name")]
        key_handling: KeyHandling,
    }
    let stats = Stats {
        key_handling: KeyHandling::MetadataOnly,
    };
    let json = serde_json::to_string(&stats).unwrap();
    assert_eq!(json, r#"{"key_handling":"metadata-only"}"#);
    assert_eq!(serde_json::from_str::<Stats>(&json).unwrap(), stats);
    let snake: Stats = serde_json::from_str(r#"{"key_handling":"metadata_only"}"#).unwrap();
    assert_eq!(snake, stats);
    let error = serde_json::from_str::<Stats>(r#"{"key_handling":"often"}"#).unwrap_err();
    assert!(
        error.to_string().contains("unknown billing key handling `often`"),
        "{error}"
    );
}
