//! The room file's own checks: what is not a room is left alone, old rooms are migrated, one
//! server per room.

use super::*;

/// The first room file's tables, as version 1 wrote them.
const SCHEMA_1: &str = "
CREATE TABLE room_settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE participants (
    id INTEGER PRIMARY KEY,
    session_sha256 TEXT UNIQUE,
    name TEXT NOT NULL,
    name_folded TEXT NOT NULL UNIQUE,
    claim_code TEXT NOT NULL
);
CREATE TABLE progress (
    participant INTEGER NOT NULL REFERENCES participants (id),
    level TEXT NOT NULL,
    finished INTEGER NOT NULL,
    plays INTEGER NOT NULL,
    last_outcome TEXT NOT NULL,
    best_cards INTEGER,
    best_phases INTEGER,
    best_outcome TEXT,
    PRIMARY KEY (participant, level)
);
CREATE TABLE games (participant INTEGER PRIMARY KEY REFERENCES participants (id), log TEXT NOT NULL);
CREATE TABLE won_tapes (
    participant INTEGER NOT NULL REFERENCES participants (id),
    level TEXT NOT NULL,
    tape TEXT NOT NULL,
    PRIMARY KEY (participant, level)
);
";

#[test]
fn a_file_that_is_not_a_room_is_refused_and_left_as_it_was() {
    let directory = tempfile::tempdir().unwrap();
    let text = directory.path().join("notes.txt");
    std::fs::write(
        &text,
        "not a database, just words, long enough to be read as a header......",
    )
    .unwrap();
    let error = RoomFile::open(&text).unwrap_err();
    assert!(matches!(error, RoomFileError::NotARoom { .. }), "{error}");
    assert!(error.to_string().contains("notes.txt"), "{error}");
    let other = directory.path().join("other.sqlite");
    Connection::open(&other)
        .unwrap()
        .execute_batch("CREATE TABLE a (x);")
        .unwrap();
    let before = std::fs::read(&other).unwrap();
    let error = RoomFile::open(&other).unwrap_err();
    assert!(error.to_string().contains("tables are a"), "{error}");
    assert_eq!(std::fs::read(&other).unwrap(), before);
}

#[test]
fn a_version_1_room_gains_the_predictions_table_and_the_counts_and_keeps_everything_else() {
    let directory = tempfile::tempdir().unwrap();
    let path = directory.path().join("room.sqlite");
    {
        let old = Connection::open(&path).unwrap();
        old.execute_batch(SCHEMA_1).unwrap();
        old.execute_batch(
            "INSERT INTO room_settings (key, value) VALUES ('schema_version', '1');
             INSERT INTO participants (session_sha256, name, name_folded, claim_code) VALUES ('aa', 'Ada', 'ada', 'ABCDEF');
             INSERT INTO progress (participant, level, finished, plays, last_outcome) VALUES (1, 'naive-retry', 0, 2, 'paid_once');",
        )
        .unwrap();
    }
    let room = RoomFile::open(&path).unwrap();
    assert_eq!(room.setting("schema_version").unwrap().as_deref(), Some("3"));
    let participants = room.participants().unwrap();
    assert_eq!(participants.len(), 1);
    assert_eq!(participants[0].prediction, PredictionState::default());
    // Losses were not counted before version 3, nor when progress was made.
    assert_eq!(participants[0].progress.len(), 1);
    let (level, progress) = &participants[0].progress[0];
    assert_eq!((level.as_str(), progress.plays, progress.losses), ("naive-retry", 2, 0));
    assert_eq!(participants[0].progress_at_ms, None);
    let mut kept = PredictionState::default();
    kept.tally.predictions = 3;
    room.save(
        participants[0].id,
        &Change {
            prediction: Some(&kept),
            progress_at_ms: Some(1_700_000_000_000),
            ..Change::default()
        },
    )
    .unwrap();
    drop(room);
    let room = RoomFile::open(&path).unwrap();
    let participants = room.participants().unwrap();
    assert_eq!(participants[0].prediction, kept);
    assert_eq!(participants[0].progress_at_ms, Some(1_700_000_000_000));
}

#[test]
fn a_second_server_on_the_same_room_is_told_it_is_in_use() {
    let directory = tempfile::tempdir().unwrap();
    let path = directory.path().join("room.sqlite");
    let first = RoomFile::open(&path).unwrap();
    first.set_setting("unlock_all", "true").unwrap();
    let error = RoomFile::open(&path).unwrap_err();
    assert!(matches!(error, RoomFileError::Locked { .. }), "{error}");
    assert!(error.to_string().contains("room.sqlite"), "{error}");
    drop(first);
    let again = RoomFile::open(&path).unwrap();
    assert_eq!(again.setting("unlock_all").unwrap().as_deref(), Some("true"));
}
