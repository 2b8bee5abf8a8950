//! Tests of the room's sessions: ids, names, bounds, claim codes, idle participants.

use super::*;

#[test]
fn session_ids_round_trip_and_nothing_else_parses() {
    let id = SessionId::generate().unwrap();
    assert_eq!(SessionId::parse(&id.to_hex()), Some(id));
    let cookie = format!("theme=dark; {COOKIE_NAME}={}; other=1", id.to_hex());
    assert_eq!(SessionId::from_cookie_header(&cookie), Some(id));
    for text in [
        "",
        "00",
        &"0".repeat(31),
        &"g".repeat(32),
        &"A".repeat(32),
        &"0".repeat(34),
    ] {
        assert_eq!(SessionId::parse(text), None, "{text}");
    }
    assert_eq!(SessionId::from_cookie_header("other=1"), None);
    assert_eq!(format!("{id:?}"), "SessionId(…)");
}

#[test]
fn names_are_trimmed_bounded_and_plain() {
    assert_eq!(check_name("  Ada   Lovelace ").unwrap(), "Ada Lovelace");
    assert_eq!(check_name("O'Brien-2.x_y").unwrap(), "O'Brien-2.x_y");
    assert_eq!(check_name("Zoë").unwrap(), "Zoë");
    for bad in ["", "   ", "<script>", "a/b", "tab\there", &"x".repeat(33)] {
        let error = check_name(bad).unwrap_err();
        assert_eq!(error.code, "invalid_value", "{bad}");
    }
}

fn sessions(max: usize, idle_timeout: Duration) -> Sessions {
    Sessions::load(RoomFile::memory().unwrap(), max, idle_timeout).unwrap()
}

#[test]
fn the_room_is_bounded_and_names_are_unique() {
    let sessions = sessions(2, Duration::from_secs(60));
    let (ada, _) = sessions.join("Ada", None, None).unwrap();
    assert_eq!(sessions.join("ada", None, None).unwrap_err().code, "name_taken");
    sessions.join("Grace", None, None).unwrap();
    let full = sessions.join("Linus", None, None).unwrap_err();
    assert_eq!((full.status, full.code), (StatusCode::SERVICE_UNAVAILABLE, "room_full"));
    // Rejoining from the same browser keeps the participant under a new id.
    let (again, session) = sessions.join("Ada", None, Some(ada)).unwrap();
    assert_eq!(sessions.len(), 2);
    assert_eq!(sessions.find(ada).unwrap_err().code, "no_session");
    assert!(Arc::ptr_eq(&sessions.find(again).unwrap(), &session));
}

#[test]
fn a_name_comes_back_on_a_new_browser_with_its_code_and_only_with_it() {
    let sessions = sessions(4, Duration::from_secs(60));
    let (old, session) = sessions.join("Ada", None, None).unwrap();
    let code = session.participant().claim_code.clone();
    assert_eq!(code.len(), CLAIM_CODE_CHARS);
    for _ in 0..CLAIM_TRIES_MAX {
        assert_eq!(
            sessions.join("ada", Some("AAAAAA"), None).unwrap_err().code,
            "wrong_code"
        );
    }
    // Past the tries, even the right code waits.
    assert_eq!(
        sessions.join("ada", Some(&code), None).unwrap_err().code,
        "too_many_tries"
    );
    sessions.claim_failures.lock().unwrap().clear();
    let (new, claimed) = sessions.join("ada", Some(&code.to_lowercase()), None).unwrap();
    assert!(Arc::ptr_eq(&claimed, &session));
    assert_eq!(sessions.find(old).unwrap_err().code, "no_session");
    assert!(sessions.find(new).is_ok());
    assert_eq!(sessions.len(), 1);
}

#[test]
fn idle_participants_give_up_their_place_and_take_it_back() {
    let sessions = sessions(1, Duration::from_millis(30));
    let (first, _) = sessions.join("Ada", None, None).unwrap();
    assert_eq!(sessions.join("Grace", None, None).unwrap_err().code, "room_full");
    std::thread::sleep(Duration::from_millis(60));
    assert_eq!(sessions.sweep(), 1);
    assert_eq!(sessions.len(), 0);
    let (second, _) = sessions.join("Grace", None, None).unwrap();
    // Ada's place went to Grace: she is told the room is full, not that she is gone.
    assert_eq!(sessions.find(first).unwrap_err().code, "room_full");
    std::thread::sleep(Duration::from_millis(60));
    assert!(
        sessions.find(first).is_ok(),
        "Grace went quiet: Ada takes the place back"
    );
    assert_eq!(sessions.find(second).unwrap_err().code, "room_full");
}
